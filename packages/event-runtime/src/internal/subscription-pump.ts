import type { CancelTimer, Clock } from '../clock.js';
import type { StoredEvent } from '../envelope.js';
import { ErrorCode, isLoomError } from '../errors.js';
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

/** First wait before reading again after the store was unavailable; doubles per failure. */
const readRetryDelayMs = 50;
/** The longest wait between two reads while the store stays unavailable. */
const readRetryDelayMaxMs = 5_000;

/**
 * A read that may succeed later without anyone fixing anything: the connection was lost or
 * could not be made (a restart, a failover) or the database was busy. ADR 0055.
 */
function isTransientRead(error: unknown): boolean {
  return (
    isLoomError(error, ErrorCode.STORE_UNAVAILABLE) || isLoomError(error, ErrorCode.STORE_BUSY)
  );
}

/**
 * Delivers a store's events to one handler, in order and in batches: catches up from the
 * cursor, then reads again whenever the source wakes it. Wake-ups that arrive while a batch is
 * being handled coalesce into one more read, so a burst of appends costs a few reads, not one
 * per event. A read the store could not serve for now (`STORE_UNAVAILABLE`, `STORE_BUSY`: a
 * restart, a failover) is tried again with backoff on the store's clock instead of ending the
 * subscription; any other read error, and any handler error, ends it through `onError`.
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
  private readFailures = 0;
  private cancelRetry: CancelTimer | undefined;

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
        let batch: StoredEvent[];
        try {
          batch = await this.readBatch();
        } catch (error) {
          if (!isTransientRead(error) || this.closed) throw error;
          this.retryLater();
          return;
        }
        this.readFailures = 0;
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

  /** Reads again after a backoff (one pending retry; a wake-up meanwhile reads at once). */
  private retryLater(): void {
    if (this.cancelRetry !== undefined) return;
    const delayMs = Math.min(readRetryDelayMaxMs, readRetryDelayMs * 2 ** this.readFailures);
    this.readFailures++;
    this.cancelRetry = this.source.clock.setTimer(() => {
      this.cancelRetry = undefined;
      this.kick();
    }, delayMs);
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
    this.cancelRetry?.();
    this.cancelRetry = undefined;
  }

  async close(): Promise<void> {
    await this.stop();
    await this.running;
  }
}
