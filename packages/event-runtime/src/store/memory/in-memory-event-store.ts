import type { Clock } from '../../clock.js';
import { systemClock } from '../../clock.js';
import type {
  AppendGuard,
  ClaimDueOptions,
  EventEnvelope,
  ExecutionSummary,
  FindExecutionsOptions,
  FlowKey,
  PrunedExecution,
  PruneOptions,
  ReadAllOptions,
  ReadOptions,
  ReadSignalsOptions,
  SignalInput,
  StoredEvent,
  StoredSignal,
} from '../../envelope.js';
import { isLoomError } from '../../errors.js';
import type {
  AppendOutcome,
  AppendRequest,
  BatchAppendingEventStore,
  FenceStore,
  SubscribeOptions,
  Subscription,
  SubscriptionHandler,
  VerifyResult,
} from '../../event-store.js';
import { admitAppend } from '../../internal/admit-append.js';
import { AppendSignal } from '../../internal/append-signal.js';
import { checkClaimDue, checkUnclaimDue, claimedByOf } from '../../internal/claim-due-arguments.js';
import { claimedByField } from '../../internal/claimed-by-field.js';
import { matchesIndexFilter, mergeIndexUpdate } from '../../internal/index-filter.js';
import { decodePayload } from '../../internal/json-codec.js';
import {
  checkExecutionId,
  guardedWakeAtMs,
  type IndexUpdate,
  type PreparedAppend,
  prepareAppend,
} from '../../internal/prepare-append.js';
import { prepareBatch } from '../../internal/prepare-batch.js';
import {
  type PreparedSignal,
  prepareSignal,
  readSignalsOptions,
  signalTargetMissing,
  signalTargetSettled,
} from '../../internal/prepare-signal.js';
import { checkPrune } from '../../internal/prune-arguments.js';
import { findExecutionsOptions, readAllOptions, readOptions } from '../../internal/read-options.js';
import { storeClosed } from '../../internal/store-errors.js';
import { StoreSubscriptions } from '../../internal/store-subscriptions.js';
import { rowToEvent, type StoredRow, storedRowOf } from '../../internal/stored-row.js';
import { storedRowsHook } from '../../internal/test-hooks.js';
import { verifyRows } from '../../internal/verify-rows.js';
import { waitingForOf } from '../../internal/waiting-for-of.js';

export interface InMemoryEventStoreOptions {
  clock?: Clock;
}

/**
 * The event log in process memory: for tests, simulation and the kernel's own benchmarks.
 * Same contract as the durable backends (one conformance suite); nothing survives the process.
 * Payloads are kept as their stored text, so a caller mutating a returned event never changes
 * the log.
 *
 * @example
 * const store = new InMemoryEventStore();
 * await store.append([{ executionId: 'order-1', sequence: 0, type: 'execution.started', payload: {} }]);
 */
export class InMemoryEventStore implements BatchAppendingEventStore {
  readonly backend = 'memory';
  readonly fences: FenceStore;
  private readonly clock: Clock;
  private readonly executions = new Map<string, StoredRow[]>();
  /** Every event by position - 1; a pruned event leaves a hole, so positions are never reused. */
  private readonly log: Array<StoredRow | undefined> = [];
  private readonly epochs = new Map<string, number>();
  private readonly index = new Map<string, IndexUpdate>();
  /** The claimer of each execution a claim flipped to running, until its next status change. */
  private readonly claimedBy = new Map<string, string>();
  private readonly signal = new AppendSignal();
  private readonly inboxes = new Map<string, Array<StoredSignal & { payloadText: string }>>();
  private readonly signalKeys = new Map<string, number>();
  private readonly subscriptions: StoreSubscriptions;
  private closed = false;

  constructor(options: InMemoryEventStoreOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.subscriptions = new StoreSubscriptions(this, {
      watch: (executionId, wake) => this.signal.watch(executionId, wake),
      pollIntervalMs: 0,
      clock: this.clock,
    });
    this.fences = {
      current: async (executionId) => {
        this.assertOpen();
        return this.epochs.get(checkExecutionId(executionId)) ?? 0;
      },
      advance: async (executionId) => {
        this.assertOpen();
        const next = (this.epochs.get(checkExecutionId(executionId)) ?? 0) + 1;
        this.epochs.set(executionId, next);
        return next;
      },
    };
  }

  async append(envelopes: readonly EventEnvelope[], guard?: AppendGuard): Promise<StoredEvent[]> {
    this.assertOpen();
    return this.appendPrepared(prepareAppend(envelopes, guard, this.clock.now()));
  }

  /**
   * Appends for many executions in one call, each request all or nothing on its own: a request
   * refused by its fence or its sequence (or invalid) gets its typed error in its outcome, the
   * others are appended (what a runtime's group commit sends; nothing is shared in memory but
   * the call). Rejects with `STORE_CLOSED`.
   */
  async appendBatch(requests: readonly AppendRequest[]): Promise<AppendOutcome[]> {
    this.assertOpen();
    const outcomes: AppendOutcome[] = new Array(requests.length);
    const fail = (index: number, error: unknown) => {
      if (!isLoomError(error)) throw error;
      outcomes[index] = { ok: false, error };
    };
    for (const [index, prepared] of prepareBatch(requests, this.clock.now(), fail)) {
      try {
        outcomes[index] = { ok: true, stored: this.appendPrepared(prepared) };
      } catch (error) {
        fail(index, error);
      }
    }
    return outcomes;
  }

  private appendPrepared(prepared: PreparedAppend): StoredEvent[] {
    const { executionId } = prepared;
    const rows = this.executions.get(executionId);
    const stored = admitAppend(prepared, {
      epoch: () => this.epochs.get(executionId) ?? 0,
      tail: () => (rows === undefined ? undefined : rows[rows.length - 1]),
    });
    const target = rows ?? [];
    for (let index = 0; index < stored.length; index++) {
      const event = stored[index] as StoredEvent;
      event.position = this.log.length + 1;
      const row = storedRowOf(event, prepared.events[index]?.payloadText as string);
      target.push(row);
      this.log.push(row);
    }
    if (rows === undefined) this.executions.set(executionId, target);
    // Nothing can fail past the admission above: the notify lands in the same (synchronous) write.
    if (prepared.notify !== undefined) this.deliver(prepared.notify, true);
    if (prepared.status !== undefined) {
      // A guarded suspension is due at once when the inbox has a signal it has not seen (ADR 0033).
      const newest = this.inboxes.get(executionId)?.length ?? 0;
      const wakeAtMs = guardedWakeAtMs(prepared.status, prepared.wakeOnSignalsAfter, newest);
      const update = { ...prepared.status, wakeAtMs };
      this.index.set(executionId, mergeIndexUpdate(this.index.get(executionId), update));
      this.claimedBy.delete(executionId);
    }
    this.signal.emit(executionId);
    return stored;
  }

  async read(executionId: string, options?: ReadOptions): Promise<StoredEvent[]> {
    this.assertOpen();
    const { fromSequence, limit } = readOptions(options);
    const rows = this.executions.get(checkExecutionId(executionId)) ?? [];
    return rows.slice(fromSequence, fromSequence + limit).map(rowToEvent);
  }

  async readAll(options?: ReadAllOptions): Promise<StoredEvent[]> {
    this.assertOpen();
    const { afterPosition, limit } = readAllOptions(options);
    const events: StoredEvent[] = [];
    for (let index = afterPosition; index < this.log.length && events.length < limit; index++) {
      const row = this.log[index];
      if (row !== undefined) events.push(rowToEvent(row));
    }
    return events;
  }

  async findExecutions(options: FindExecutionsOptions): Promise<ExecutionSummary[]> {
    this.assertOpen();
    const filter = findExecutionsOptions(options);
    const found: ExecutionSummary[] = [];
    for (const [executionId, entry] of this.index) {
      if (executionId <= filter.afterExecutionId || !matchesIndexFilter(entry, filter)) continue;
      const rows = this.executions.get(executionId) as StoredRow[];
      const last = rows[rows.length - 1] as StoredRow;
      found.push({
        executionId,
        status: entry.status,
        settledAs: entry.settledAs,
        flow: entry.flow,
        version: entry.version,
        startedBy: entry.startedBy,
        ...claimedByField(this.claimedBy.get(executionId)),
        wakeAtMs: entry.wakeAtMs,
        ...waitingForOf(entry.status, entry.waitingFor),
        createdAtMs: entry.createdAtMs,
        updatedAtMs: entry.updatedAtMs,
        lastEventAt: last.at,
        nextSequence: rows.length,
      });
    }
    found.sort((a, b) =>
      a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0,
    );
    return found.slice(0, filter.limit);
  }

  async sendSignal(input: SignalInput): Promise<{ signalId: number; duplicate: boolean }> {
    this.assertOpen();
    return this.deliver(prepareSignal(input, this.clock.now()), false) as {
      signalId: number;
      duplicate: boolean;
    };
  }

  /**
   * Puts a signal in its execution's inbox (`sendSignal`); `quiet` (an append's `notify`) skips a
   * missing or settled target instead of throwing, returning undefined.
   */
  private deliver(
    prepared: PreparedSignal,
    quiet: boolean,
  ): { signalId: number; duplicate: boolean } | undefined {
    const { executionId } = prepared;
    if (!this.executions.has(executionId)) {
      if (quiet) return undefined;
      throw signalTargetMissing(executionId);
    }
    const entry = this.index.get(executionId);
    const key =
      prepared.idempotencyKey === null
        ? undefined
        : `${executionId}\u0000${prepared.idempotencyKey}`;
    // The key first: a signal sent again after its target settled is still the duplicate it is.
    const existing = key === undefined ? undefined : this.signalKeys.get(key);
    if (existing !== undefined) return { signalId: existing, duplicate: true };
    if (entry?.status === 'settled') {
      if (quiet) return undefined;
      throw signalTargetSettled(executionId);
    }
    const inbox = this.inboxes.get(executionId) ?? [];
    const signalId = inbox.length + 1;
    inbox.push({
      executionId,
      signalId,
      name: prepared.name,
      payload: null,
      payloadText: prepared.payloadText,
      idempotencyKey: prepared.idempotencyKey,
      at: prepared.at,
    });
    this.inboxes.set(executionId, inbox);
    if (key !== undefined) this.signalKeys.set(key, signalId);
    if (entry?.status === 'suspended') entry.wakeAtMs = prepared.at;
    return { signalId, duplicate: false };
  }

  async readSignals(executionId: string, options?: ReadSignalsOptions): Promise<StoredSignal[]> {
    this.assertOpen();
    const { afterSignalId, limit } = readSignalsOptions(options);
    const inbox = this.inboxes.get(checkExecutionId(executionId)) ?? [];
    return inbox.slice(afterSignalId, afterSignalId + limit).map(({ payloadText, ...signal }) => ({
      ...signal,
      payload: decodePayload(payloadText),
    }));
  }

  async claimDue(nowMs: number, limit: number, options?: ClaimDueOptions): Promise<string[]> {
    this.assertOpen();
    const flows = checkClaimDue(nowMs, limit, options);
    const claimedBy = claimedByOf(options);
    const runnable = flows === undefined ? undefined : flowsByName(flows);
    const due: Array<[string, number]> = [];
    for (const [executionId, entry] of this.index) {
      if (
        entry.status === 'suspended' &&
        entry.wakeAtMs !== null &&
        entry.wakeAtMs <= nowMs &&
        (runnable === undefined ||
          entry.flow === null ||
          runnable.get(entry.flow)?.has(entry.version) === true)
      ) {
        due.push([executionId, entry.wakeAtMs]);
      }
    }
    due.sort((a, b) => a[1] - b[1]);
    const claimed = due.slice(0, limit).map(([executionId]) => executionId);
    const claimedAtMs = this.clock.now();
    for (const executionId of claimed) {
      const entry = this.index.get(executionId) as IndexUpdate;
      this.index.set(executionId, {
        ...entry,
        status: 'running',
        wakeAtMs: null,
        updatedAtMs: claimedAtMs,
      });
      if (claimedBy === null) this.claimedBy.delete(executionId);
      else this.claimedBy.set(executionId, claimedBy);
    }
    return claimed;
  }

  async unclaimDue(executionIds: readonly string[], nowMs: number): Promise<string[]> {
    this.assertOpen();
    const ids = checkUnclaimDue(executionIds, nowMs);
    const updatedAtMs = this.clock.now();
    const unclaimed: string[] = [];
    for (const executionId of ids) {
      const entry = this.index.get(executionId);
      if (entry?.status !== 'running') continue;
      this.index.set(executionId, { ...entry, status: 'suspended', wakeAtMs: nowMs, updatedAtMs });
      this.claimedBy.delete(executionId);
      unclaimed.push(executionId);
    }
    return unclaimed;
  }

  async prune(options: PruneOptions): Promise<PrunedExecution[]> {
    this.assertOpen();
    const { endedBeforeMs, executionIds, limit } = checkPrune(options);
    const candidates = executionIds ?? [...this.index.keys()];
    const chosen = candidates
      .filter((executionId) => {
        const entry = this.index.get(executionId);
        return entry?.status === 'settled' && entry.updatedAtMs < endedBeforeMs;
      })
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, limit);
    return chosen.map((executionId) => this.remove(executionId));
  }

  /** Removes one execution's log, index row, fence and inbox (prune). */
  private remove(executionId: string): PrunedExecution {
    const rows = this.executions.get(executionId) as StoredRow[];
    for (const row of rows) this.log[row.position - 1] = undefined;
    this.executions.delete(executionId);
    this.index.delete(executionId);
    this.claimedBy.delete(executionId);
    this.epochs.delete(executionId);
    this.inboxes.delete(executionId);
    const keyPrefix = `${executionId}\u0000`;
    for (const key of this.signalKeys.keys()) {
      if (key.startsWith(keyPrefix)) this.signalKeys.delete(key);
    }
    const last = rows[rows.length - 1] as StoredRow;
    return { executionId, events: rows.length, lastHash: last.hash };
  }

  subscribe(options: SubscribeOptions, handler: SubscriptionHandler): Subscription {
    this.assertOpen();
    return this.subscriptions.subscribe(options, handler);
  }

  async verify(executionId: string): Promise<VerifyResult> {
    this.assertOpen();
    return verifyRows(executionId, this.executions.get(checkExecutionId(executionId)) ?? []);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.subscriptions.closeAll();
  }

  /** Test hook (`storedRows` of `/testing`): an execution's stored rows, for tamper tests. */
  [storedRowsHook](executionId: string): StoredRow[] {
    return this.executions.get(executionId) ?? [];
  }

  private assertOpen(): void {
    if (this.closed) throw storeClosed(this.backend);
  }
}

/** Versions by flow name, for claimDue's filter. */
function flowsByName(flows: readonly FlowKey[]): Map<string, Set<string | null>> {
  const byName = new Map<string, Set<string | null>>();
  for (const { name, version } of flows) {
    const versions = byName.get(name) ?? new Set<string | null>();
    versions.add(version);
    byName.set(name, versions);
  }
  return byName;
}
