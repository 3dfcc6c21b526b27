import type { Clock } from '../clock.js';
import type {
  AppendGuard,
  EventEnvelope,
  ExecutionStatus,
  JsonValue,
  SignalInput,
  StoredEvent,
  WaitKind,
} from '../envelope.js';
import { ErrorCode, isLoomError } from '../errors.js';
import type { AppendRequest, TransactionalEventStore } from '../event-store.js';
import {
  type EncodedEnvelope,
  payloadSourceKey,
  payloadTextKey,
} from '../internal/encoded-payloads.js';
import { Limits } from '../limits.js';
import type { GroupCommit, GroupCommitMember } from './group-commit.js';
import { isTransientStoreError, retryDelayMs, type StoreRetrySettings } from './store-retry.js';

/**
 * Busy refusals of one append in a row before the journal breaks (then the execution is resumed
 * from the log, as after any store failure). With the default backoff (100 ms doubling, 5 s cap)
 * that is about 16 s of waiting beside the store's own busy timeout per attempt: longer than a
 * lock held by a migration or a backup step, short enough for a shutdown not to hang on it.
 */
export const busyAppendAttemptsMax = 8;

/** How a journal sends an append again that the store refused as busy (see `failed`). */
export interface JournalBusyRetry {
  readonly settings: StoreRetrySettings;
  /** Told before each new attempt (1-based), with the error the last one failed with. */
  retrying(attempt: number, error: unknown): void;
}

interface Waiter {
  /** Durable once every event up to this sequence is in the log. */
  upTo: number;
  /** Called with `upTo` once it is durable. */
  resolve: (upTo: number) => void;
  reject: (error: unknown) => void;
}

/**
 * One execution's append tail: events are recorded in order and appended in order, one append
 * in flight at a time. Nothing is written until someone needs durability (`flush`): the kernel
 * flushes before an effect starts, before a result leaves the execution and before it suspends.
 * Everything recorded between two barriers goes in one append, so an n-step flow costs n + 1
 * appends. Flushes asked for in the same turn share one append, and the node's group commit
 * sends the appends of every journal that flushed in that turn in one write (ADR 0040).
 *
 * Once an append fails, the journal is broken: every later flush rejects with that error (the
 * execution must be reloaded from the log, which is the truth).
 */
export class ExecutionJournal implements GroupCommitMember {
  private pending: EventEnvelope[] = [];
  private waiters: Waiter[] = [];
  /**
   * Callbacks waiting for a sequence to be durable without asking for a write (`whenDurable`):
   * made on first use, dropped when the journal breaks.
   */
  private watchers: { upTo: number; fn: () => void }[] | undefined;
  private inFlight = false;
  private scheduled = false;
  private broken: unknown;
  private sealed = false;
  private durableUpTo: number;
  /** The last sequence of the append in flight. */
  private sentUpTo = -1;
  /** The append in flight, kept to be sent again if the store refuses it as busy. */
  private sent: AppendRequest | undefined;
  /** Busy refusals of the append in flight in a row (0 once one commits). */
  private busyAttempts = 0;
  private nextSequence: number;
  private pendingStatus:
    | {
        status: ExecutionStatus;
        wakeAtMs: number | null;
        wakeOnSignalsAfter?: number;
        waitingFor?: readonly WaitKind[];
        notify?: SignalInput;
      }
    | undefined;
  /** Called after each successful append with the events as stored. */
  onAppended: ((events: StoredEvent[]) => void) | undefined;

  constructor(
    /** The node's group commit: what sends this journal's appends, with other journals'. */
    private readonly commits: GroupCommit,
    readonly executionId: string,
    nextSequence: number,
    private fenceEpoch: number,
    /** The runtime's clock: stamps events, and times a busy append's next attempt. */
    readonly clock: Clock,
    /** Sends a busy append again (bounded, backing off); without it the journal breaks at once. */
    private readonly busyRetry?: JournalBusyRetry,
  ) {
    this.nextSequence = nextSequence;
    this.durableUpTo = nextSequence - 1;
  }

  /** The sequence the next recorded event gets. */
  get sequence(): number {
    return this.nextSequence;
  }

  get epoch(): number {
    return this.fenceEpoch;
  }

  /** The error that broke the journal, if one did. */
  get failure(): unknown {
    return this.broken;
  }

  /** No more records after this (the terminal or the suspension was recorded). */
  seal(): void {
    this.sealed = true;
  }

  /**
   * Queue an event; it becomes durable at the next flush. Returns its sequence, or -1 once the
   * journal is sealed (a late effect's completion after the terminal is dropped, not appended).
   * `payloadText`, when the caller encoded the payload already, is what the log stores.
   */
  record(type: string, payload: JsonValue, payloadText?: string): number {
    if (this.sealed) return -1;
    const sequence = this.nextSequence++;
    const envelope: EncodedEnvelope = {
      executionId: this.executionId,
      sequence,
      type,
      payload,
      at: this.clock.now(),
      [payloadTextKey]: payloadText,
      [payloadSourceKey]: payload,
    };
    this.pending.push(envelope);
    return sequence;
  }

  /**
   * Record the execution's new status with the next append (the index is updated atomically).
   * `wakeOnSignalsAfter`: a suspension's signal guard (`AppendGuard.wakeOnSignalsAfter`);
   * `waitingFor`: what a suspension waits for (`AppendGuard.waitingFor`).
   */
  setStatus(
    status: ExecutionStatus,
    wakeAtMs: number | null = null,
    wakeOnSignalsAfter?: number,
    waitingFor?: readonly WaitKind[],
  ): void {
    this.pendingStatus = { status, wakeAtMs };
    if (wakeOnSignalsAfter !== undefined)
      this.pendingStatus.wakeOnSignalsAfter = wakeOnSignalsAfter;
    if (waitingFor !== undefined) this.pendingStatus.waitingFor = waitingFor;
  }

  /**
   * Record the settle with the next append, and deliver `notify` (a child's end to its parent) in
   * the same write (`AppendGuard.notify`, ADR 0047).
   */
  setSettled(notify: SignalInput | undefined): void {
    this.pendingStatus = { status: 'settled', wakeAtMs: null };
    if (notify !== undefined) this.pendingStatus.notify = notify;
  }

  /**
   * Asks for what is recorded so far to be written in this turn's write, without waiting for it
   * (ADR 0045). A failed append breaks the journal: the next `flush` rejects with it.
   */
  flushSoon(): void {
    // Swallowed here only: the journal keeps the failure and every later flush rejects with it.
    this.flush().catch(() => {});
  }

  /** Resolves once everything recorded so far is durable; rejects if an append fails. */
  flush(): Promise<void> {
    if (this.broken !== undefined) return Promise.reject(this.broken);
    const upTo = this.nextSequence - 1;
    if (upTo <= this.durableUpTo) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      // Called with the sequence made durable, which the promise's value ignores (void).
      this.waiters.push({ upTo, resolve: resolve as unknown as (upTo: number) => void, reject });
      if (!this.inFlight) this.pump();
    });
  }

  /**
   * `flush` without a promise, for a caller that listens with callbacks made once (the driver's
   * barrier command): `durable(upTo)` once everything recorded so far (up to sequence `upTo`)
   * is durable, or `failed(error)` if an append fails. Never called back synchronously.
   */
  flushTo(durable: (upTo: number) => void, failed: (error: unknown) => void): void {
    if (this.broken !== undefined) {
      Promise.reject(this.broken).catch(failed);
      return;
    }
    const upTo = this.nextSequence - 1;
    if (upTo <= this.durableUpTo) {
      Promise.resolve(upTo).then(durable);
      return;
    }
    this.waiters.push({ upTo, resolve: durable, reject: failed });
    if (!this.inFlight) this.pump();
  }

  /**
   * Calls `fn` once every event up to sequence `upTo` is durable, by whatever write makes it so
   * (this asks for none); never if the journal breaks first. Never called back synchronously.
   */
  whenDurable(upTo: number, fn: () => void): void {
    if (this.broken !== undefined) return;
    if (upTo <= this.durableUpTo) {
      Promise.resolve().then(fn);
      return;
    }
    this.watchers ??= [];
    this.watchers.push({ upTo, fn });
  }

  /** Asks the group commit for a turn, once: it sends what is pending when the turn is over. */
  private pump(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    this.commits.want(this);
  }

  /** The append of everything pending (up to the per-append limit), marked in flight. */
  takeAppend(): AppendRequest | undefined {
    this.scheduled = false;
    if (this.inFlight || this.broken !== undefined || this.pending.length === 0) return undefined;
    const batch = this.pending.splice(0, Limits.eventsPerAppendMax);
    const guard: AppendGuard = { fenceEpoch: this.fenceEpoch };
    const status = this.pending.length === 0 ? this.pendingStatus : undefined;
    if (status !== undefined) {
      guard.status = status.status;
      if (status.wakeAtMs !== null) guard.wakeAtMs = status.wakeAtMs;
      if (status.wakeOnSignalsAfter !== undefined) {
        guard.wakeOnSignalsAfter = status.wakeOnSignalsAfter;
      }
      if (status.waitingFor !== undefined) guard.waitingFor = status.waitingFor;
      if (status.notify !== undefined) guard.notify = status.notify;
      this.pendingStatus = undefined;
    }
    this.inFlight = true;
    this.sentUpTo = (batch[batch.length - 1] as EventEnvelope).sequence;
    this.sent = { envelopes: batch, guard };
    return this.sent;
  }

  /**
   * The append taken last committed as `stored`. The waiters hear it even when `onAppended`
   * throws (its error goes on to the group commit, which reports it).
   */
  appended(stored: StoredEvent[]): void {
    this.inFlight = false;
    this.sent = undefined;
    this.busyAttempts = 0;
    this.durableUpTo = this.sentUpTo;
    try {
      this.onAppended?.(stored);
    } finally {
      this.settleWaiters();
      if (this.waiters.length > 0) this.pump();
    }
  }

  /**
   * The append taken last failed: the journal is broken, every waiter hears why. Unless the store
   * refused it as busy (`STORE_BUSY`: SQLITE_BUSY past the busy timeout, a Postgres deadlock or
   * serialization failure; the transaction rolled back, nothing of it is in the log): then the
   * same events go again after a backoff on the clock, up to `busyAppendAttemptsMax` times in a
   * row (and never more than `storeRetriesMax`), so
   * a returned result is not turned into an unknown outcome by a lock another process held.
   */
  failed(error: unknown): void {
    this.inFlight = false;
    const sent = this.sent;
    this.sent = undefined;
    const retry = this.busyRetry;
    if (
      retry !== undefined &&
      sent !== undefined &&
      isLoomError(error, ErrorCode.STORE_BUSY) &&
      this.busyAttempts < Math.min(busyAppendAttemptsMax, retry.settings.storeRetriesMax)
    ) {
      this.sendAgain(sent, retry, error);
      return;
    }
    this.broken = error;
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter.reject(error);
    this.watchers = undefined;
  }

  /** Puts `sent` back in front of what is pending and asks for a turn after the backoff. */
  private sendAgain(sent: AppendRequest, retry: JournalBusyRetry, error: unknown): void {
    this.pending.unshift(...sent.envelopes);
    const guard: AppendGuard = sent.guard ?? {};
    // The status rode with the last events; a newer one recorded meanwhile supersedes it.
    if (guard.status !== undefined && this.pendingStatus === undefined) {
      this.pendingStatus = { status: guard.status, wakeAtMs: guard.wakeAtMs ?? null };
      if (guard.wakeOnSignalsAfter !== undefined) {
        this.pendingStatus.wakeOnSignalsAfter = guard.wakeOnSignalsAfter;
      }
      if (guard.waitingFor !== undefined) this.pendingStatus.waitingFor = guard.waitingFor;
      // A child's end wakes its parent in the write that settles it: the resend must carry it too.
      if (guard.notify !== undefined) this.pendingStatus.notify = guard.notify;
    }
    const attempt = this.busyAttempts++;
    retry.retrying(attempt + 1, error);
    this.clock.setTimer(
      () => {
        if (this.broken === undefined && !this.inFlight) this.pump();
      },
      retryDelayMs(retry.settings, attempt),
    );
  }

  /**
   * Appends everything pending plus the event `completion` makes of `work`'s result in one
   * database transaction with `work` itself. If `work` (or `completion`) throws, nothing is
   * written and the error is rethrown; if the append fails, or the store fails transiently
   * (`STORE_UNAVAILABLE`, `STORE_BUSY`) before it, the journal is broken.
   */
  async transact<T>(
    store: TransactionalEventStore,
    work: (tx: unknown) => T | Promise<T>,
    completion: (result: T) => { type: string; payload: JsonValue; payloadText?: string },
  ): Promise<T> {
    await this.flush();
    while (this.inFlight) await new Promise<void>((resolve) => this.clock.defer(resolve));
    if (this.broken !== undefined) throw this.broken;
    this.inFlight = true;
    let batch: EventEnvelope[] | undefined;
    let lastSequence = this.durableUpTo;
    let workError: unknown;
    // Stays synchronous for a synchronous `work` (SQLite refuses a transaction across an await).
    const watchedWork = (tx: unknown): T | Promise<T> => {
      try {
        const result = work(tx);
        if (!(result instanceof Promise)) return result;
        return result.catch((error: unknown) => {
          workError = error;
          throw error;
        });
      } catch (error) {
        workError = error;
        throw error;
      }
    };
    try {
      const { result, stored } = await store.transact(
        watchedWork,
        (result) => {
          const event = completion(result);
          batch = this.pending.splice(0);
          lastSequence = this.nextSequence++;
          const envelope: EncodedEnvelope = {
            executionId: this.executionId,
            sequence: lastSequence,
            type: event.type,
            payload: event.payload,
            at: this.clock.now(),
            [payloadTextKey]: event.payloadText,
            [payloadSourceKey]: event.payload,
          };
          batch.push(envelope);
          return batch;
        },
        { fenceEpoch: this.fenceEpoch },
      );
      this.durableUpTo = lastSequence;
      // Before `onAppended`, which may throw: what the transaction made durable is durable.
      if (this.watchers !== undefined) this.settleWatchers();
      this.onAppended?.(stored);
      return result;
    } catch (error) {
      // The store's own transient failure (not an error `work` threw): the transaction did not
      // commit, or its answer was lost; either way the log must be re-read, as after an append.
      if (batch !== undefined || (error !== workError && isTransientStoreError(error))) {
        this.broken = error;
        const waiters = this.waiters;
        this.waiters = [];
        for (const waiter of waiters) waiter.reject(error);
        this.watchers = undefined;
      }
      throw error;
    } finally {
      this.inFlight = false;
      this.settleWaiters();
      if (this.waiters.length > 0) this.pump();
    }
  }

  /** True when every recorded event is durable. */
  get idle(): boolean {
    return this.pending.length === 0 && !this.inFlight;
  }

  private settleWaiters(): void {
    if (this.watchers !== undefined) this.settleWatchers();
    // The common case: every waiter is durable now (no array of the ones still waiting).
    if (this.waiters.every((waiter) => waiter.upTo <= this.durableUpTo)) {
      const waiters = this.waiters;
      if (waiters.length === 0) return;
      this.waiters = [];
      for (const waiter of waiters) waiter.resolve(waiter.upTo);
      return;
    }
    const still: Waiter[] = [];
    for (const waiter of this.waiters) {
      if (waiter.upTo <= this.durableUpTo) waiter.resolve(waiter.upTo);
      else still.push(waiter);
    }
    this.waiters = still;
  }

  private settleWatchers(): void {
    const watchers = this.watchers as { upTo: number; fn: () => void }[];
    if (this.broken !== undefined) {
      this.watchers = undefined;
      return;
    }
    const due = watchers.filter((watcher) => watcher.upTo <= this.durableUpTo);
    if (due.length === 0) return;
    this.watchers =
      due.length === watchers.length ? undefined : watchers.filter((w) => !due.includes(w));
    for (const watcher of due) {
      try {
        watcher.fn();
      } catch {
        // Dropped: a watcher that throws must not keep the flushes behind it from settling.
      }
    }
  }
}
