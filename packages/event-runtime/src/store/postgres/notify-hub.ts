import type { Pool } from 'pg';
import type { Clock } from '../../clock.js';
import { AppendSignal } from '../../internal/append-signal.js';
import { BucketListener } from './bucket-listener.js';
import { HeldBackWake } from './held-back-wake.js';
import { bucketOf, channelName } from './notify-bucket.js';
import { checkOut } from './pg-client.js';
import { decodeNotify, notifyStatement, PostCommitNotifier } from './post-commit-notifier.js';

/**
 * Both ends of a schema's bucketed NOTIFY channels. Sending: committed appends are announced
 * after their commit by one {@link PostCommitNotifier} per store (ADR 0028), never inside the
 * appending transaction. Receiving: NOTIFYs become wake-ups of the store's subscriptions: global
 * watchers hear every append, an execution's watchers hear its own, and global watchers are woken
 * again, with backoff, for as long as their reads find rows held back behind an open transaction
 * ({@link HeldBackWake}). The one listener connection is
 * created on the first watch.
 */
export class NotifyHub {
  private readonly signal = new AppendSignal();
  private readonly channels: readonly string[];
  private listener: BucketListener | undefined;
  private readonly heldBack: HeldBackWake;
  private readonly notifier: PostCommitNotifier;
  /** Notifications received (for the store's stats). */
  received = 0;

  constructor(
    private readonly pool: Pool,
    schema: string,
    private readonly buckets: number,
    private readonly clock: Clock,
  ) {
    this.heldBack = new HeldBackWake(
      clock,
      () => this.signal.watchedGlobally,
      () => this.signal.emitGlobal(),
    );
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

  /** A readAll of the store ran and found rows held back, or none: see {@link HeldBackWake}. */
  readAllHeldBack(heldBack: boolean): void {
    this.heldBack.readAll(heldBack);
  }

  /** Sends the announcements still pending, then closes the listener connection. */
  async close(): Promise<void> {
    this.heldBack.close();
    await this.notifier.close();
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

  /**
   * A notification's payload is a JSON array of execution ids (see `encodeNotifies`). A row it
   * announces may still be held back from readAll when it arrives: the read it causes says so
   * ({@link readAllHeldBack}), and the global watchers are woken again until it is not.
   */
  private notified(payload: string): void {
    this.received++;
    for (const executionId of decodeNotify(payload)) this.signal.emit(executionId);
  }
}
