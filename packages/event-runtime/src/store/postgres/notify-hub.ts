import type { Pool } from 'pg';
import type { Clock } from '../../clock.js';
import { AppendSignal } from '../../internal/append-signal.js';
import { BucketListener } from './bucket-listener.js';
import { bucketOf, channelName } from './notify-bucket.js';
import { checkOut } from './pg-client.js';
import { decodeNotify, notifyStatement, PostCommitNotifier } from './post-commit-notifier.js';

/**
 * A second wake this long after a notification: readAll only returns rows below the snapshot
 * xmin, so a row whose notification arrives while another transaction is still open stays
 * hidden from the first re-read; most such transactions are over by then.
 */
const lateWakeMs = 25;

/**
 * Both ends of a schema's bucketed NOTIFY channels. Sending: committed appends are announced
 * after their commit by one {@link PostCommitNotifier} per store (ADR 0028), never inside the
 * appending transaction. Receiving: NOTIFYs become wake-ups of the store's subscriptions: global
 * watchers hear every append, an execution's watchers hear its own. The one listener connection
 * is created on the first watch.
 */
export class NotifyHub {
  private readonly signal = new AppendSignal();
  private readonly channels: readonly string[];
  private listener: BucketListener | undefined;
  private readonly lateWakes = new Set<string>();
  private cancelLateWake: (() => void) | undefined;
  private readonly notifier: PostCommitNotifier;
  /** Notifications received (for the store's stats). */
  received = 0;

  constructor(
    private readonly pool: Pool,
    schema: string,
    private readonly buckets: number,
    private readonly clock: Clock,
  ) {
    this.channels = Array.from({ length: buckets }, (_, bucket) => channelName(schema, bucket));
    const statement = notifyStatement(schema);
    this.notifier = new PostCommitNotifier(async (channels, payloads) => {
      await pool.query({
        name: statement.name,
        text: statement.text,
        values: [channels, payloads],
      });
    });
  }

  /** Notify statements sent so far, and how many of them failed. */
  get sent(): { statements: number; failures: number } {
    return { statements: this.notifier.statements, failures: this.notifier.failures };
  }

  /** The channel an execution's appends notify. */
  channelOf(executionId: string): string {
    return this.channels[bucketOf(executionId, this.buckets)] as string;
  }

  /**
   * Calls `wake` when events of the execution (or of any, when undefined) may have been
   * appended, including once the LISTEN is in effect. Returns an unwatch.
   */
  watch(executionId: string | undefined, wake: () => void): () => void {
    const channels = executionId === undefined ? this.channels : [this.channelOf(executionId)];
    const unwatch = this.signal.watch(executionId, wake);
    this.listener ??= new BucketListener({
      // Guarded from the moment it leaves the pool; the listener adds its own handler after.
      connect: async () => (await checkOut(this.pool)).client,
      onNotification: (_channel, payload) => this.notified(payload),
      onReconnect: () => this.signal.emitAll(),
      clock: this.clock,
    });
    const release = this.listener.retain(channels, wake);
    return () => {
      unwatch();
      release();
    };
  }

  /**
   * This process committed an append: announce it to other processes (after the commit, folded
   * with other appends) and wake its own watchers now rather than after the NOTIFY round trip.
   */
  appended(executionId: string): void {
    this.notifier.committed(this.channelOf(executionId), executionId);
    if (this.signal.watched) this.signal.emit(executionId);
  }

  /** Sends the announcements still pending, then closes the listener connection. */
  async close(): Promise<void> {
    await this.notifier.close();
    this.cancelLateWake?.();
    await this.listener?.close();
  }

  /** Test hook: the channels the listener connection LISTENs to, as the server reports them. */
  listeningChannels(): Promise<string[]> {
    return this.listener?.channelsOnServer() ?? Promise.resolve([]);
  }

  /** Test hook: the server pid of the listener connection, if connected. */
  get listenerProcessId(): number | undefined {
    return this.listener?.processId;
  }

  /** A notification's payload is a JSON array of execution ids (see `encodeNotifies`). */
  private notified(payload: string): void {
    this.received++;
    for (const executionId of decodeNotify(payload)) {
      this.signal.emit(executionId);
      this.lateWakes.add(executionId);
    }
    if (this.lateWakes.size === 0) return;
    if (this.cancelLateWake !== undefined) return;
    this.cancelLateWake = this.clock.setTimer(() => {
      this.cancelLateWake = undefined;
      const executionIds = [...this.lateWakes];
      this.lateWakes.clear();
      for (const id of executionIds) this.signal.emit(id);
    }, lateWakeMs);
  }
}
