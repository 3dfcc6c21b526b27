import type { Pool } from 'pg';
import type { Clock } from '../../clock.js';
import { quoteIdent } from './schema-name.js';
import { TipPoller } from './tip-poller.js';
import { eventTipsStatement, readTips } from './tip-statements.js';

/**
 * What the event store needs from its wake-up source, whichever the mode: `NotifyHub`
 * (LISTEN/NOTIFY) or {@link PolledAppendFeed} (no notifications, ADR 0057).
 */
export interface AppendFeedSource {
  watch(executionId: string | undefined, wake: () => void): () => void;
  appended(executionId: string): void;
  /**
   * A readAll of the store just ran: `heldBack` says whether it left committed rows behind an
   * open transaction (see read-all-statement.ts). The global watchers must then read again after
   * that transaction ends, which no notification will announce.
   */
  readAllHeldBack(heldBack: boolean): void;
  close(): Promise<void>;
  readonly sent: { statements: number; failures: number };
  readonly received: number;
  listeningChannels(): Promise<string[]>;
  readonly listenerProcessId: number | undefined;
}

/**
 * The event store's wake-ups in `notifications: 'poll'` mode: never LISTENs, never NOTIFYs.
 * Appends of this process wake its watchers at once; other processes' appends are found by one
 * tip statement per `pollIntervalMs` for all watched executions ({@link TipPoller}).
 */
export class PolledAppendFeed implements AppendFeedSource {
  private readonly poller: TipPoller;
  readonly received = 0;
  readonly listenerProcessId = undefined;

  constructor(pool: Pool, schema: string, intervalMs: number, clock: Clock) {
    const statement = eventTipsStatement(quoteIdent(schema), schema);
    this.poller = new TipPoller({
      readTips: (executionIds) =>
        readTips(
          async (s, values) => (await pool.query({ name: s.name, text: s.text, values })).rows,
          statement,
          executionIds,
        ),
      intervalMs,
      clock,
    });
  }

  /** No notify statement is ever sent in this mode. */
  get sent(): { statements: number; failures: number } {
    return { statements: 0, failures: 0 };
  }

  /** Tip statements sent, and how many failed. */
  get polls(): { statements: number; failures: number } {
    return { statements: this.poller.statements, failures: this.poller.failures };
  }

  watch(executionId: string | undefined, wake: () => void): () => void {
    return this.poller.watch(executionId, wake);
  }

  appended(executionId: string): void {
    if (this.poller.watched) this.poller.emit(executionId);
  }

  /**
   * Nothing to do: every tick wakes the global watchers whatever moved (their readAll is the
   * poll), so rows held back now are read on the first tick after their transaction ends.
   */
  readAllHeldBack(): void {}

  async close(): Promise<void> {
    this.poller.close();
  }

  /** No listener connection in this mode. */
  listeningChannels(): Promise<string[]> {
    return Promise.resolve([]);
  }
}
