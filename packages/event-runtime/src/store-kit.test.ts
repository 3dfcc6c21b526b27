import { describe, expect, it } from 'vitest';
import {
  type AppendGuard,
  type ClaimDueOptions,
  type Clock,
  type EventEnvelope,
  type EventStore,
  type ExecutionSummary,
  type FenceStore,
  type FindExecutionsOptions,
  type PrunedExecution,
  type PruneOptions,
  type ReadAllOptions,
  type ReadOptions,
  type ReadSignalsOptions,
  type SignalInput,
  type StoredEvent,
  type StoredSignal,
  type SubscribeOptions,
  type Subscription,
  type SubscriptionHandler,
  systemClock,
  type VerifyResult,
} from './index.js';
import {
  AppendSignal,
  admitAppend,
  checkClaimDue,
  checkExecutionId,
  checkPrune,
  checkUnclaimDue,
  claimedByField,
  claimedByOf,
  decodePayload,
  findExecutionsOptions,
  guardedWakeAtMs,
  type IndexUpdate,
  matchesIndexFilter,
  mergeIndexUpdate,
  type PreparedSignal,
  prepareAppend,
  prepareSignal,
  readAllOptions,
  readOptions,
  readSignalsOptions,
  rowToEvent,
  type StoredRow,
  StoreSubscriptions,
  signalTargetMissing,
  signalTargetSettled,
  storeClosed,
  storedRowOf,
  verifyRows,
  waitingForOf,
} from './store-kit.js';
import { eventStoreConformance, sameProcessPeer } from './testing.js';

interface Inbox {
  signals: Array<Omit<StoredSignal, 'payload'> & { payloadText: string }>;
  keys: Map<string, number>;
}

/**
 * A fourth backend, built only from the store kit: its whole job is keeping rows in Maps. Every
 * check, error, hash and subscription comes from `@loom/event-runtime/store-kit`.
 */
class MapEventStore implements EventStore {
  readonly backend = 'map';
  readonly fences: FenceStore;
  readonly rows = new Map<string, StoredRow[]>();
  private readonly log: Array<StoredRow | undefined> = [];
  private readonly epochs = new Map<string, number>();
  private readonly index = new Map<string, IndexUpdate>();
  /** claimDue's claimer per execution, until the next status change. */
  private readonly claimedBy = new Map<string, string>();
  private readonly inboxes = new Map<string, Inbox>();
  private readonly appended = new AppendSignal();
  private readonly subscriptions: StoreSubscriptions;
  private closed = false;

  constructor(private readonly clock: Clock = systemClock) {
    this.subscriptions = new StoreSubscriptions(this, {
      watch: (executionId, wake) => this.appended.watch(executionId, wake),
      pollIntervalMs: 0,
      clock,
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
    const prepared = prepareAppend(envelopes, guard, this.clock.now());
    const id = prepared.executionId;
    const rows = this.rows.get(id) ?? [];
    const stored = admitAppend(prepared, {
      epoch: () => this.epochs.get(id) ?? 0,
      tail: () => rows[rows.length - 1],
    });
    stored.forEach((event, index) => {
      event.position = this.log.length + 1;
      const row = storedRowOf(event, prepared.events[index]?.payloadText as string);
      rows.push(row);
      this.log.push(row);
    });
    this.rows.set(id, rows);
    // A settling append's signal to another execution, in the same (synchronous) write.
    if (prepared.notify !== undefined) this.deliver(prepared.notify, true);
    if (prepared.status !== undefined) {
      const newest = this.inboxes.get(id)?.signals.length ?? 0;
      const wakeAtMs = guardedWakeAtMs(prepared.status, prepared.wakeOnSignalsAfter, newest);
      this.index.set(id, mergeIndexUpdate(this.index.get(id), { ...prepared.status, wakeAtMs }));
      this.claimedBy.delete(id);
    }
    this.appended.emit(id);
    return stored;
  }

  async read(executionId: string, options?: ReadOptions): Promise<StoredEvent[]> {
    this.assertOpen();
    const { fromSequence, limit } = readOptions(options);
    const rows = this.rows.get(checkExecutionId(executionId)) ?? [];
    return rows.slice(fromSequence, fromSequence + limit).map(rowToEvent);
  }

  async readAll(options?: ReadAllOptions): Promise<StoredEvent[]> {
    this.assertOpen();
    const { afterPosition, limit } = readAllOptions(options);
    const rows: StoredRow[] = [];
    for (let at = afterPosition; at < this.log.length && rows.length < limit; at++) {
      const row = this.log[at];
      if (row !== undefined) rows.push(row);
    }
    return rows.map(rowToEvent);
  }

  async findExecutions(options: FindExecutionsOptions): Promise<ExecutionSummary[]> {
    this.assertOpen();
    const filter = findExecutionsOptions(options);
    const ids = [...this.index.keys()].filter(
      (id) =>
        id > filter.afterExecutionId &&
        matchesIndexFilter(this.index.get(id) as IndexUpdate, filter),
    );
    return ids
      .sort()
      .slice(0, filter.limit)
      .map((executionId) => {
        const entry = this.index.get(executionId) as IndexUpdate;
        const rows = this.rows.get(executionId) as StoredRow[];
        const { createdAtMs, flow, settledAs, status, updatedAtMs, version, wakeAtMs } = entry;
        const { startedBy } = entry;
        return {
          ...{ executionId, createdAtMs, flow, settledAs, status, updatedAtMs, version, wakeAtMs },
          startedBy,
          ...claimedByField(this.claimedBy.get(executionId)),
          ...waitingForOf(status, entry.waitingFor),
          lastEventAt: (rows[rows.length - 1] as StoredRow).at,
          nextSequence: rows.length,
        };
      });
  }

  async sendSignal(input: SignalInput): Promise<{ signalId: number; duplicate: boolean }> {
    this.assertOpen();
    return this.deliver(prepareSignal(input, this.clock.now()), false) as {
      signalId: number;
      duplicate: boolean;
    };
  }

  /** `sendSignal`'s write; `quiet` (an append's notify) skips a missing or settled target. */
  private deliver(
    signal: PreparedSignal,
    quiet: boolean,
  ): { signalId: number; duplicate: boolean } | undefined {
    const id = signal.executionId;
    if (!this.rows.has(id)) {
      if (quiet) return undefined;
      throw signalTargetMissing(id);
    }
    const entry = this.index.get(id);
    const inbox: Inbox = this.inboxes.get(id) ?? { signals: [], keys: new Map() };
    const key = signal.idempotencyKey;
    const existing = key === null ? undefined : inbox.keys.get(key);
    if (existing !== undefined) return { signalId: existing, duplicate: true };
    if (entry?.status === 'settled') {
      if (quiet) return undefined;
      throw signalTargetSettled(id);
    }
    this.inboxes.set(id, inbox);
    const signalId = inbox.signals.length + 1;
    const { name, payloadText, idempotencyKey, at } = signal;
    inbox.signals.push({ executionId: id, signalId, name, payloadText, idempotencyKey, at });
    if (key !== null) inbox.keys.set(key, signalId);
    if (entry?.status === 'suspended') entry.wakeAtMs = signal.at;
    return { signalId, duplicate: false };
  }

  async readSignals(executionId: string, options?: ReadSignalsOptions): Promise<StoredSignal[]> {
    this.assertOpen();
    const { afterSignalId, limit } = readSignalsOptions(options);
    const inbox = this.inboxes.get(checkExecutionId(executionId))?.signals ?? [];
    return inbox
      .slice(afterSignalId, afterSignalId + limit)
      .map(({ payloadText, ...signal }) => ({ ...signal, payload: decodePayload(payloadText) }));
  }

  async claimDue(nowMs: number, limit: number, options?: ClaimDueOptions): Promise<string[]> {
    this.assertOpen();
    const flows = checkClaimDue(nowMs, limit, options);
    const claimedBy = claimedByOf(options);
    const runs = (flow: string | null, version: string | null) =>
      flows === undefined ||
      flow === null ||
      flows.some((key) => key.name === flow && key.version === version);
    const due = [...this.index]
      .filter(
        ([, entry]) =>
          entry.status === 'suspended' &&
          (entry.wakeAtMs ?? nowMs + 1) <= nowMs &&
          runs(entry.flow, entry.version),
      )
      .sort((a, b) => (a[1].wakeAtMs as number) - (b[1].wakeAtMs as number))
      .slice(0, limit);
    const updatedAtMs = this.clock.now();
    for (const [id, entry] of due) {
      this.index.set(id, { ...entry, status: 'running', wakeAtMs: null, updatedAtMs });
      if (claimedBy === null) this.claimedBy.delete(id);
      else this.claimedBy.set(id, claimedBy);
    }
    return due.map(([id]) => id);
  }

  async unclaimDue(executionIds: readonly string[], nowMs: number): Promise<string[]> {
    this.assertOpen();
    const updatedAtMs = this.clock.now();
    return checkUnclaimDue(executionIds, nowMs).filter((id) => {
      const entry = this.index.get(id);
      if (entry?.status !== 'running') return false;
      this.index.set(id, { ...entry, status: 'suspended', wakeAtMs: nowMs, updatedAtMs });
      this.claimedBy.delete(id);
      return true;
    });
  }

  async prune(options: PruneOptions): Promise<PrunedExecution[]> {
    this.assertOpen();
    const { endedBeforeMs, executionIds, limit } = checkPrune(options);
    const chosen = (executionIds ?? [...this.index.keys()])
      .filter((id) => {
        const entry = this.index.get(id);
        return entry?.status === 'settled' && entry.updatedAtMs < endedBeforeMs;
      })
      .sort()
      .slice(0, limit);
    return chosen.map((executionId) => {
      const rows = this.rows.get(executionId) as StoredRow[];
      for (const row of rows) this.log[row.position - 1] = undefined;
      for (const map of [this.rows, this.index, this.epochs, this.inboxes]) map.delete(executionId);
      const last = rows[rows.length - 1] as StoredRow;
      return { executionId, events: rows.length, lastHash: last.hash };
    });
  }

  subscribe(options: SubscribeOptions, handler: SubscriptionHandler): Subscription {
    this.assertOpen();
    return this.subscriptions.subscribe(options, handler);
  }

  async verify(executionId: string): Promise<VerifyResult> {
    this.assertOpen();
    return verifyRows(executionId, this.rows.get(checkExecutionId(executionId)) ?? []);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.subscriptions.closeAll();
  }

  private assertOpen(): void {
    if (this.closed) throw storeClosed(this.backend);
  }
}

eventStoreConformance('store-kit (a Map-based fourth backend)', async () => {
  const store = new MapEventStore();
  return {
    store,
    // One heap: a peer is a view on the same Maps that closes on its own.
    openPeer: async () => sameProcessPeer(store),
    countRows: async (executionId) => store.rows.get(executionId)?.length ?? 0,
    tamper: async (executionId, sequence, payloadText) => {
      const row = store.rows.get(executionId)?.[sequence];
      if (row !== undefined) row.payloadText = payloadText;
    },
    close: () => store.close(),
  };
});

describe('store-kit', () => {
  it('a backend built from the kit refuses a stale fence with the kit’s typed error', async () => {
    const store = new MapEventStore();
    await store.append([
      { executionId: 'kit-1', sequence: 0, type: 'execution.started', payload: {} },
    ]);
    await store.fences.advance('kit-1');
    const refused = await store
      .append([{ executionId: 'kit-1', sequence: 1, type: 't', payload: null }], { fenceEpoch: 0 })
      .then(
        () => undefined,
        (error: unknown) => error as { code: string; fields: Record<string, unknown> },
      );
    expect(refused?.code).toBe('FENCE_STALE');
    expect(refused?.fields).toMatchObject({ executionId: 'kit-1', expected: 1, actual: 0 });
    await store.close();
  });
});
