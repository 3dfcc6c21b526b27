import type { Clock, StoredEvent } from '@loom/event-runtime';
import type { AgentEvent, AgentStream } from '../agent-event.js';
import { AgentErrorCode, LoomError } from '../errors.js';
import type { LiveText } from './live-text.js';
import { RunEventDecoder } from './run-event-decoder.js';

/** Log events read per page while a stream catches up: 500. */
export const streamReadPageSize = 500;

/** Events a stream holds for a slow consumer before it stops reading the log: 1 000. */
export const streamBufferedEventsMax = 1_000;

/** What a stream reads: the run's log and its live text. */
export interface StreamSource {
  readonly clock: Pick<Clock, 'defer'>;
  readonly live: LiveText;
  read(runId: string, fromSequence: number, limit: number): Promise<StoredEvent[]>;
  /** Delivers the run's events from `fromSequence` on, as they are appended. */
  subscribe(
    runId: string,
    fromSequence: number,
    handler: (events: StoredEvent[]) => Promise<void>,
    onError: (error: unknown) => void,
  ): { close(): Promise<void> };
}

type Waiter = { resolve: (r: IteratorResult<AgentEvent>) => void; reject: (e: unknown) => void };

/**
 * A run's events for one consumer: the log read page by page (`replayed: true`), then a
 * subscription from the next sequence (`replayed: false`), so each log event is decoded once, in
 * order. Text deltas from this process join in: held until their turn's `turn_started` has been
 * delivered, and coalesced, all the text that arrives within one turn of I/O (`clock.defer`),
 * or before the next durable event, becoming one `text_delta`.
 */
export class AgentEventStream implements AgentStream {
  private readonly queue: AgentEvent[] = [];
  private waiter: Waiter | undefined;
  private drained: (() => void) | undefined;
  private failure: unknown;
  private ended = false;
  private closed = false;
  private readonly decoder: RunEventDecoder;
  private subscription: { close(): Promise<void> } | undefined;
  private readonly stopText: () => void;
  /** The newest turn whose `turn_started` was delivered. */
  private turnStarted = 0;
  /** Text of turns whose `turn_started` has not been delivered yet. */
  private readonly heldText = new Map<number, string>();
  /** Text waiting to be delivered as one `text_delta`. */
  private pendingText: { turn: number; text: string } | undefined;
  private flushArmed = false;

  constructor(
    private readonly runId: string,
    private readonly source: StreamSource,
  ) {
    this.decoder = new RunEventDecoder(runId);
    // Listening before the log is read: no delta of a call in progress is missed.
    this.stopText = source.live.listen(runId, (turn, text) => this.onText(turn, text));
    this.open().catch((error: unknown) => this.fail(error));
  }

  [Symbol.asyncIterator](): AgentStream {
    return this;
  }

  next(): Promise<IteratorResult<AgentEvent>> {
    const event = this.queue.shift();
    if (event !== undefined) {
      if (this.queue.length < streamBufferedEventsMax) this.release();
      return Promise.resolve({ done: false, value: event });
    }
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.ended || this.closed) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  async return(): Promise<IteratorResult<AgentEvent>> {
    await this.close();
    return { done: true, value: undefined };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopText();
    this.release();
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.resolve({ done: true, value: undefined });
    await this.subscription?.close();
  }

  private async open(): Promise<void> {
    let next = 0;
    for (;;) {
      const page = await this.source.read(this.runId, next, streamReadPageSize);
      if (this.closed) return;
      for (const event of page) {
        next = event.sequence + 1;
        if (this.take(event, true)) return;
      }
      if (page.length < streamReadPageSize) break;
    }
    this.subscription = this.source.subscribe(
      this.runId,
      next,
      async (events) => {
        for (const event of events) {
          if (this.closed || this.ended) return;
          if (event.sequence < next) continue;
          next = event.sequence + 1;
          if (this.take(event, false)) {
            void this.subscription?.close();
            return;
          }
        }
        if (this.queue.length >= streamBufferedEventsMax && !this.closed) {
          await new Promise<void>((resolve) => {
            this.drained = resolve;
          });
        }
      },
      (error) => this.fail(error),
    );
    if (this.closed || this.ended) await this.subscription.close();
  }

  /** Decodes one log event into the queue; true once the run has ended. */
  private take(event: StoredEvent, replayed: boolean): boolean {
    for (const decoded of this.decoder.decode(event, replayed)) {
      this.flushText();
      this.push(decoded);
      if (decoded.type === 'turn_started') {
        this.turnStarted = Math.max(this.turnStarted, decoded.turn);
        const held = this.heldText.get(decoded.turn);
        if (held !== undefined) {
          this.heldText.delete(decoded.turn);
          this.onText(decoded.turn, held);
        }
      } else if (decoded.type === 'finished') {
        this.end();
        return true;
      }
    }
    if (RunEventDecoder.isTerminal(event)) {
      const error = (event.payload as { error?: { message?: unknown } }).error;
      this.fail(
        new LoomError(
          AgentErrorCode.RUN_FAILED,
          `run '${this.runId}' ended without an agent result (${event.type}${typeof error?.message === 'string' ? `: ${error.message}` : ''}): read its log with the flow runtime to see why`,
          { runId: this.runId, eventType: event.type },
        ),
      );
      return true;
    }
    return false;
  }

  private onText(turn: number, text: string): void {
    if (this.closed || this.ended) return;
    if (turn > this.turnStarted) {
      this.heldText.set(turn, (this.heldText.get(turn) ?? '') + text);
      return;
    }
    if (this.pendingText !== undefined && this.pendingText.turn !== turn) this.flushText();
    if (this.pendingText === undefined) this.pendingText = { turn, text };
    else this.pendingText.text += text;
    if (!this.flushArmed) {
      this.flushArmed = true;
      this.source.clock.defer(() => {
        this.flushArmed = false;
        this.flushText();
      });
    }
  }

  private flushText(): void {
    const pending = this.pendingText;
    if (pending === undefined) return;
    this.pendingText = undefined;
    this.push({ runId: this.runId, replayed: false, type: 'text_delta', ...pending });
  }

  private push(event: AgentEvent): void {
    if (this.closed) return;
    const waiter = this.waiter;
    if (waiter !== undefined) {
      this.waiter = undefined;
      waiter.resolve({ done: false, value: event });
      return;
    }
    this.queue.push(event);
  }

  private end(): void {
    this.ended = true;
    this.stopText();
    this.release();
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.resolve({ done: true, value: undefined });
  }

  private fail(error: unknown): void {
    if (this.closed || this.ended) return;
    this.failure = error;
    this.ended = true;
    this.stopText();
    this.release();
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.reject(error);
    void this.subscription?.close();
  }

  private release(): void {
    const drained = this.drained;
    this.drained = undefined;
    drained?.();
  }
}
