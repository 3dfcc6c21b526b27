import type { Clock } from '../clock.js';
import type { StoredEvent } from '../envelope.js';
import type { SubscribeOptions, Subscription, SubscriptionHandler } from '../event-store.js';
import { checkExecutionId } from './prepare-append.js';
import { readAllOptions, readOptions } from './read-options.js';

/** What a backend gives the pump: reads, and a way to hear that something was appended. */
export interface PumpSource {
  readAll(afterPosition: number, limit: number): Promise<StoredEvent[]>;
  read(executionId: string, fromSequence: number, limit: number): Promise<StoredEvent[]>;
  /** Call `wake` whenever events of interest may have been appended. Returns an unwatch. */
  watch(executionId: string | undefined, wake: () => void): () => void;
  /** Poll this often as well (for writers the backend cannot hear). 0 = never. */
  pollIntervalMs: number;
  /** The store's clock, which arms the poll timer. */
  clock: Clock;
}

const defaultBatchSize = 500;

/**
 * Delivers a store's events to one handler, in order and in batches: catches up from the
 * cursor, then reads again whenever the source wakes it. Wake-ups that arrive while a batch is
 * being handled coalesce into one more read, so a burst of appends costs a few reads, not one
 * per event.
 */
export class SubscriptionPump implements Subscription {
  private readonly executionId: string | undefined;
  private readonly batchSize: number;
  private cursor: number;
  private dirty = true;
  private running: Promise<void> | undefined;
  private closed = false;
  private readonly unwatch: () => void;
  private readonly stopPolling: (() => void) | undefined;

  constructor(
    private readonly source: PumpSource,
    private readonly options: SubscribeOptions,
    private readonly handler: SubscriptionHandler,
  ) {
    this.executionId =
      options.executionId === undefined ? undefined : checkExecutionId(options.executionId);
    this.batchSize = readAllOptions({ limit: options.batchSize ?? defaultBatchSize }).limit;
    this.cursor =
      this.executionId === undefined
        ? readAllOptions({ afterPosition: options.afterPosition ?? 0 }).afterPosition
        : readOptions({ fromSequence: options.fromSequence ?? 0 }).fromSequence;
    this.unwatch = source.watch(this.executionId, () => this.kick());
    if (source.pollIntervalMs > 0) {
      this.stopPolling = source.clock.setRepeating(() => this.kick(), source.pollIntervalMs);
    }
    this.kick();
  }

  private kick(): void {
    this.dirty = true;
    if (this.running === undefined && !this.closed) this.running = this.run();
  }

  private async run(): Promise<void> {
    try {
      while (this.dirty && !this.closed) {
        this.dirty = false;
        const batch = await this.readBatch();
        if (batch.length === 0 || this.closed) continue;
        await this.handler(batch);
        const last = batch[batch.length - 1] as StoredEvent;
        this.cursor = this.executionId === undefined ? last.position : last.sequence + 1;
        this.dirty = true;
      }
    } catch (error) {
      await this.stop();
      this.options.onError?.(error);
    } finally {
      this.running = undefined;
    }
  }

  private readBatch(): Promise<StoredEvent[]> {
    return this.executionId === undefined
      ? this.source.readAll(this.cursor, this.batchSize)
      : this.source.read(this.executionId, this.cursor, this.batchSize);
  }

  private async stop(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unwatch();
    this.stopPolling?.();
  }

  async close(): Promise<void> {
    await this.stop();
    await this.running;
  }
}
