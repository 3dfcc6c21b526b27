import type {
  AppendGuard,
  ClaimDueOptions,
  EventEnvelope,
  ExecutionSummary,
  FindExecutionsOptions,
  PrunedExecution,
  PruneOptions,
  ReadAllOptions,
  ReadOptions,
  ReadSignalsOptions,
  SignalInput,
  StoredEvent,
} from './envelope.js';
import { ErrorCode, isLoomError, LoomError } from './errors.js';
import {
  type AppendOutcome,
  type AppendRequest,
  type BatchAppendingEventStore,
  canAppendBatch,
  type EventStore,
  type FenceStore,
  type SubscribeOptions,
  type Subscription,
  type SubscriptionHandler,
} from './event-store.js';
import { checkClaimDue, checkUnclaimDue } from './internal/claim-due-arguments.js';
import { repeatedInBatch } from './internal/prepare-batch.js';
import { prepareSignal } from './internal/prepare-signal.js';
import { checkPrune } from './internal/prune-arguments.js';
import { readAllOptions } from './internal/read-options.js';
import { Limits } from './limits.js';

/** Most shards a {@link ShardedEventStore} takes (positions stay safe integers far beyond it). */
export const shardCountMax = 1024;

const utf8 = new TextEncoder();
const jumpMultiplier = 2862933555777941757n;

/**
 * The shard of an execution among `shardCount` shards: Jump Consistent Hash (Lamping and Veach,
 * 2014) of the 32-bit FNV-1a hash of the id's UTF-8 bytes. A pure function of the id and the
 * count, the same in every process and every release: it must never change for a given count,
 * or executions would be looked for on the wrong database. Growing from N to N+1 shards moves
 * only about 1/(N+1) of the ids (each to the new shard), which is what keeps a migration small.
 *
 * Throws `INVALID_ARGUMENT` when `shardCount` is not an integer from 1 to {@link shardCountMax}.
 *
 * @example
 * shardOf('order-1', 3); // 0, 1 or 2; the same forever
 */
export function shardOf(executionId: string, shardCount: number): number {
  checkShardCount(shardCount);
  const bytes = utf8.encode(typeof executionId === 'string' ? executionId : String(executionId));
  let hash = 0x811c9dc5;
  for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193);
  let key = BigInt(hash >>> 0);
  let bucket = -1;
  let next = 0;
  while (next < shardCount) {
    bucket = next;
    key = BigInt.asUintN(64, key * jumpMultiplier + 1n);
    next = Math.floor((bucket + 1) * (2 ** 31 / (Number(key >> 33n) + 1)));
  }
  return bucket;
}

function checkShardCount(shardCount: number): void {
  if (!Number.isSafeInteger(shardCount) || shardCount < 1 || shardCount > shardCountMax) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `a sharded store needs 1 to ${shardCountMax} shards, got ${String(shardCount)}`,
      { path: 'shards', actual: shardCount },
    );
  }
}

/**
 * Where a reader of a sharded log stands: one log position per shard (the shard's own position
 * of the last event read from it, 0 before the first). The merged log has no single order
 * across shards (each database orders only its own commits), so this, not one number, is what
 * a follower of the whole log checkpoints. `toString()` and {@link ShardCursor.parse} round-trip
 * it through text (`"12.0.7"` for three shards).
 *
 * @example
 * let cursor = ShardCursor.start(3);
 * const events = await store.readAll({ after: cursor });
 * cursor = cursor.advance(events);
 * await saveCheckpoint(cursor.toString());
 */
export class ShardCursor {
  private constructor(readonly positions: readonly number[]) {}

  /** Before the first event of every shard. */
  static start(shardCount: number): ShardCursor {
    checkShardCount(shardCount);
    return new ShardCursor(Array.from({ length: shardCount }, () => 0));
  }

  /** Reads `toString()`'s text back. Throws `INVALID_ARGUMENT` for anything else. */
  static parse(text: string): ShardCursor {
    const parts = typeof text === 'string' ? text.split('.') : [];
    const positions = parts.map((part) => (/^(0|[1-9][0-9]*)$/.test(part) ? Number(part) : -1));
    if (
      positions.length === 0 ||
      positions.length > shardCountMax ||
      positions.some((position) => !Number.isSafeInteger(position) || position < 0)
    ) {
      throw new LoomError(
        ErrorCode.INVALID_ARGUMENT,
        `not a shard cursor (shard positions joined by dots): ${JSON.stringify(String(text))}`,
        { path: 'cursor', actual: String(text) },
      );
    }
    return new ShardCursor(positions);
  }

  /**
   * The cursor after `events` (merged events of a store with as many shards, in the order it
   * gave them): each shard's entry becomes the shard position of its last event among them.
   * (A shard's positions need not grow along its order: on Postgres the order is by commit.)
   */
  advance(events: readonly StoredEvent[]): ShardCursor {
    const count = this.positions.length;
    const next = [...this.positions];
    for (const event of events) {
      const shard = event.position % count;
      next[shard] = (event.position - shard) / count;
    }
    return new ShardCursor(next);
  }

  toString(): string {
    return this.positions.join('.');
  }
}

/** `readAll` of a sharded store: the plain options, or a cursor instead of `afterPosition`. */
export interface ShardedReadAllOptions extends ReadAllOptions {
  /** Read after this cursor (it wins over `afterPosition`). */
  after?: ShardCursor;
}

/** `subscribe` of a sharded store: the plain options, or a cursor instead of `afterPosition`. */
export interface ShardedSubscribeOptions extends SubscribeOptions {
  /** Follow the whole log after this cursor (it wins over `afterPosition`). */
  after?: ShardCursor;
}

/**
 * One `EventStore` over several: each execution lives on the shard {@link shardOf} picks, and
 * every call about one execution (append, read, signals, fences, verify, its subscription) goes
 * to that shard only. Calls about many executions ask every shard: `findExecutions` merges their
 * pages by id, `claimDue` claims from one shard after another (starting one further each call)
 * until it has `limit`; `unclaimDue` gives each id back on its shard.
 *
 * Positions: an event on shard `s` (of `n`) at the shard's own position `p` has the merged
 * position `p * n + s`, so `position % n` names its shard. There is no commit order across
 * databases, so the merged log promises each shard's (and so each execution's) order and every
 * event once, not one order of all:
 *
 * - `readAll({ after: cursor })` asks every shard for the page after its cursor entry and takes
 *   from their pages in turn (one event of each shard, round after round), so a busy shard does
 *   not starve the others. Checkpoint `cursor.advance(events)`: it resumes exactly, also after a
 *   restart and while shards keep committing.
 * - `readAll({ afterPosition })` (the plain `EventStore` call) reads shard after shard: all of
 *   shard 0, then shard 1, and so on, so that the last event's position alone says where to go
 *   on. That pages a log exactly, but a follower of a live log must use a cursor: an event that
 *   commits on an earlier shard after the reader moved on is behind its position.
 * - `subscribe({})` or `subscribe({ after: cursor })` follows every shard from its cursor entry
 *   and hands their batches to the handler one at a time, each shard's in its order, the shards
 *   interleaved as they commit. From a plain `afterPosition` on shard `s`, shards before `s` are
 *   followed from their end when the subscription starts (read through once, before its first
 *   delivery), later ones from the start. See ADR 0039.
 *
 * It offers no `transact` (a transaction lives on one database, chosen before the work runs) and
 * no default lease store (`openSharded` hands the runtime shard 0's); `appendBatch` splits a
 * batch by shard.
 * `close()` closes every shard.
 *
 * Error codes: those of the shards, and `INVALID_ARGUMENT` (no shards, more than
 * `shardCountMax`, a cursor of another shard count).
 *
 * @example
 * const store = new ShardedEventStore([new InMemoryEventStore(), new InMemoryEventStore()]);
 * await store.append([{ executionId: 'order-1', sequence: 0, type: 'execution.started', payload: {} }]);
 * const events = await store.readAll();
 */
export class ShardedEventStore implements BatchAppendingEventStore {
  readonly backend: string;
  readonly fences: FenceStore;
  private claimStart = 0;

  constructor(readonly shards: readonly EventStore[]) {
    checkShardCount(Array.isArray(shards) ? shards.length : Number.NaN);
    const kinds = [...new Set(shards.map((shard) => shard.backend))];
    this.backend = `sharded(${shards.length}×${kinds.join('+')})`;
    this.fences = {
      current: (executionId) => this.shardFor(executionId).fences.current(executionId),
      advance: (executionId) => this.shardFor(executionId).fences.advance(executionId),
    };
  }

  /** The shard index of an execution (`shardOf(executionId, shards.length)`). */
  shardIndex(executionId: string): number {
    return shardOf(executionId, this.shards.length);
  }

  /** The store an execution lives on. */
  shardFor(executionId: string): EventStore {
    return this.shards[this.shardIndex(executionId)] as EventStore;
  }

  /** An event of shard `shard` with its merged position. */
  merged(event: StoredEvent, shard: number): StoredEvent {
    return { ...event, position: event.position * this.shards.length + shard };
  }

  private mergedAll(events: StoredEvent[], shard: number): StoredEvent[] {
    return events.map((event) => this.merged(event, shard));
  }

  async append(envelopes: readonly EventEnvelope[], guard?: AppendGuard): Promise<StoredEvent[]> {
    const first = Array.isArray(envelopes) ? envelopes[0] : undefined;
    const shard = typeof first?.executionId === 'string' ? this.shardIndex(first.executionId) : 0;
    const across = this.notifyAcross(shard, guard);
    const stored = await (this.shards[shard] as EventStore).append(
      envelopes,
      across?.guard ?? guard,
    );
    if (across !== undefined) await this.notifyAfter(across.notify);
    return this.mergedAll(stored, shard);
  }

  /**
   * A guard whose `notify` names an execution on another shard: the guard without it, and the
   * signal to send there after the append. One transaction cannot span two databases, so across
   * shards the wake-up is a second write (a process that dies between the two leaves the target
   * to be woken otherwise, as before ADR 0047); on one shard it stays in the same write.
   */
  private notifyAcross(
    shard: number,
    guard: AppendGuard | undefined,
  ): { guard: AppendGuard; notify: SignalInput } | undefined {
    const notify = guard?.notify;
    // Anything but a settle's valid signal to another shard goes to the shard as it is, which
    // writes it in the same transaction or refuses the guard.
    if (notify === undefined || guard?.status !== 'settled') return undefined;
    const target = prepareSignal(notify, 0).executionId;
    if (this.shardIndex(target) === shard) return undefined;
    const { notify: _, ...rest } = guard;
    return { guard: rest, notify };
  }

  /**
   * The cross-shard half of an append's `notify`, best effort: the append is durable by now, so
   * a failure here must not make it look failed. A missing or settled target is skipped as on one
   * shard; a store failure is left to the sender, which sends the same signal again after the
   * append (the runtime does, with the same idempotency key).
   */
  private async notifyAfter(notify: SignalInput): Promise<void> {
    await this.sendSignal(notify).catch(() => undefined);
  }

  /**
   * Appends for many executions: the requests split by shard, one write per shard (that shard's
   * `appendBatch`, or its `append` per request when it has none), the shards in parallel. Each
   * request is all or nothing on its own, as on one store: a refused one (or a repeated
   * execution, `INVALID_ARGUMENT`) gets its error in its outcome. A shard's write that fails as a
   * whole fails that shard's requests only; a shard that throws something other than a
   * `LoomError` (a broken store) rejects the call once every shard's write has settled. What a
   * runtime's group commit sends (ADR 0040).
   */
  async appendBatch(requests: readonly AppendRequest[]): Promise<AppendOutcome[]> {
    const outcomes: AppendOutcome[] = new Array(requests.length);
    const byShard = new Map<number, number[]>();
    const seen = new Set<string>();
    requests.forEach((request, index) => {
      const first = Array.isArray(request.envelopes) ? request.envelopes[0] : undefined;
      const id = typeof first?.executionId === 'string' ? first.executionId : undefined;
      if (id !== undefined && seen.has(id)) {
        outcomes[index] = { ok: false, error: repeatedInBatch(id, index) };
        return;
      }
      if (id !== undefined) seen.add(id);
      const shard = id === undefined ? 0 : this.shardIndex(id);
      const indexes = byShard.get(shard);
      if (indexes === undefined) byShard.set(shard, [index]);
      else indexes.push(index);
    });
    const settled = await Promise.allSettled(
      [...byShard].map(async ([shard, indexes]) => {
        const store = this.shards[shard] as EventStore;
        const across = indexes.map((index) => this.notifyAcross(shard, requests[index]?.guard));
        const mine = indexes.map((index, at) => {
          const request = requests[index] as AppendRequest;
          const split = across[at];
          return split === undefined ? request : { ...request, guard: split.guard };
        });
        let answers: AppendOutcome[];
        try {
          answers = canAppendBatch(store)
            ? await store.appendBatch(mine)
            : await Promise.all(mine.map((request) => appendOutcome(store, request)));
        } catch (error) {
          if (!isLoomError(error)) throw error;
          answers = mine.map(() => ({ ok: false, error }));
        }
        for (const [at, split] of across.entries()) {
          if (split !== undefined && answers[at]?.ok === true) await this.notifyAfter(split.notify);
        }
        indexes.forEach((index, at) => {
          const answer = answers[at] as AppendOutcome;
          outcomes[index] = answer.ok
            ? { ok: true, stored: this.mergedAll(answer.stored, shard) }
            : answer;
        });
      }),
    );
    for (const result of settled) if (result.status === 'rejected') throw result.reason;
    return outcomes;
  }

  async read(executionId: string, options?: ReadOptions): Promise<StoredEvent[]> {
    const shard = this.shardIndex(executionId);
    return this.mergedAll(
      await (this.shards[shard] as EventStore).read(executionId, options),
      shard,
    );
  }

  /** Every shard's events after `after` (round-robin) or after `afterPosition` (shard after shard). */
  async readAll(options?: ShardedReadAllOptions): Promise<StoredEvent[]> {
    const { afterPosition, limit } = readAllOptions(options);
    if (options?.after !== undefined) {
      return this.readAfterCursor(this.checkCursor(options.after), limit);
    }
    const count = this.shards.length;
    const first = afterPosition % count;
    const events: StoredEvent[] = [];
    for (let shard = first; shard < count && events.length < limit; shard++) {
      const after = shard === first ? (afterPosition - first) / count : 0;
      const page = await (this.shards[shard] as EventStore)
        .readAll({ afterPosition: after, limit: limit - events.length })
        .catch((error: unknown) => {
          throw error instanceof LoomError && error.fields.path === 'afterPosition'
            ? new LoomError(
                error.code,
                `afterPosition ${afterPosition} is not the position of an event of this sharded ` +
                  `store (shard ${first} says: ${error.message})`,
                { ...error.fields, actual: afterPosition },
              )
            : error;
        });
      events.push(...this.mergedAll(page, shard));
    }
    return events;
  }

  private async readAfterCursor(cursor: ShardCursor, limit: number): Promise<StoredEvent[]> {
    const pages = await Promise.all(
      this.shards.map(async (store, shard) =>
        this.mergedAll(
          await store.readAll({ afterPosition: cursor.positions[shard] as number, limit }),
          shard,
        ),
      ),
    );
    const events: StoredEvent[] = [];
    for (let index = 0; events.length < limit; index++) {
      let any = false;
      for (const page of pages) {
        const event = page[index];
        if (event === undefined) continue;
        any = true;
        events.push(event);
        if (events.length === limit) break;
      }
      if (!any) break;
    }
    return events;
  }

  private checkCursor(after: ShardCursor): ShardCursor {
    if (!(after instanceof ShardCursor) || after.positions.length !== this.shards.length) {
      throw new LoomError(
        ErrorCode.INVALID_ARGUMENT,
        `the cursor is not one of a ${this.shards.length}-shard store: ${String(after)}`,
        { path: 'after', actual: String(after) },
      );
    }
    return after;
  }

  /**
   * The shard positions a plain merged position stands for in a subscription: its own shard
   * after it, earlier shards at their current end (read through once), later ones from the start.
   */
  private async cursorAtPosition(afterPosition: number): Promise<number[]> {
    const count = this.shards.length;
    const first = afterPosition % count;
    const positions = Array.from({ length: count }, () => 0);
    positions[first] = (afterPosition - first) / count;
    for (let shard = 0; shard < first; shard++) {
      const store = this.shards[shard] as EventStore;
      for (;;) {
        const page = await store.readAll({
          afterPosition: positions[shard] as number,
          limit: Limits.readLimitMax,
        });
        const last = page[page.length - 1];
        if (last === undefined) break;
        positions[shard] = last.position;
      }
    }
    return positions;
  }

  /** Every shard's page, merged by execution id (the order each shard uses), at most `limit`. */
  async findExecutions(options: FindExecutionsOptions): Promise<ExecutionSummary[]> {
    const pages = await Promise.all(this.shards.map((store) => store.findExecutions(options)));
    const limit = options?.limit ?? Limits.readLimitMax;
    return pages
      .flat()
      .sort((a, b) => (a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0))
      .slice(0, limit);
  }

  sendSignal(signal: SignalInput) {
    const target = (signal as Partial<SignalInput> | undefined)?.executionId;
    return this.shards[typeof target === 'string' ? this.shardIndex(target) : 0]!.sendSignal(
      signal,
    );
  }

  readSignals(executionId: string, options?: ReadSignalsOptions) {
    return this.shardFor(executionId).readSignals(executionId, options);
  }

  /**
   * Claims from one shard after another until `limit` are claimed; each call starts at the next
   * shard, so no shard's due executions wait behind another's.
   */
  async claimDue(nowMs: number, limit: number, options?: ClaimDueOptions): Promise<string[]> {
    checkClaimDue(nowMs, limit, options);
    const count = this.shards.length;
    const start = this.claimStart;
    this.claimStart = (start + 1) % count;
    const claimed: string[] = [];
    for (let step = 0; step < count && claimed.length < limit; step++) {
      const store = this.shards[(start + step) % count] as EventStore;
      claimed.push(...(await store.claimDue(nowMs, limit - claimed.length, options)));
    }
    return claimed;
  }

  /** Gives each execution back on its own shard (one call per shard that holds any of them). */
  async unclaimDue(executionIds: readonly string[], nowMs: number): Promise<string[]> {
    const byShard = new Map<number, string[]>();
    for (const executionId of checkUnclaimDue(executionIds, nowMs)) {
      const shard = this.shardIndex(executionId);
      byShard.set(shard, [...(byShard.get(shard) ?? []), executionId]);
    }
    const unclaimed: string[] = [];
    for (const [shard, ids] of byShard) {
      unclaimed.push(...(await (this.shards[shard] as EventStore).unclaimDue(ids, nowMs)));
    }
    return unclaimed;
  }

  /**
   * Prunes shard after shard until `limit` executions are removed (with `executionIds`, only the
   * shards that hold any of them, each given its own ids). Each shard's removal is one write of
   * its own: there is no transaction across shards.
   */
  async prune(options: PruneOptions): Promise<PrunedExecution[]> {
    const { endedBeforeMs, executionIds, limit } = checkPrune(options);
    const calls: Array<[EventStore, string[] | undefined]> = [];
    if (executionIds === undefined) {
      for (const store of this.shards) calls.push([store, undefined]);
    } else {
      const byShard = new Map<number, string[]>();
      for (const executionId of executionIds) {
        const shard = this.shardIndex(executionId);
        byShard.set(shard, [...(byShard.get(shard) ?? []), executionId]);
      }
      for (const [shard, ids] of byShard) calls.push([this.shards[shard] as EventStore, ids]);
    }
    const pruned: PrunedExecution[] = [];
    for (const [store, ids] of calls) {
      if (pruned.length >= limit) break;
      const remaining = limit - pruned.length;
      pruned.push(
        ...(await store.prune(
          ids === undefined
            ? { endedBeforeMs, limit: remaining }
            : { endedBeforeMs, executionIds: ids, limit: remaining },
        )),
      );
    }
    return pruned;
  }

  /**
   * One execution: that shard's subscription. The whole log: one subscription per shard from
   * the cursor, their batches handed to `handler` one at a time (each shard's in its order).
   */
  subscribe(options: ShardedSubscribeOptions, handler: SubscriptionHandler): Subscription {
    if (options.executionId !== undefined) {
      const shard = this.shardIndex(options.executionId);
      return (this.shards[shard] as EventStore).subscribe(options, (events) =>
        handler(this.mergedAll(events, shard)),
      );
    }
    const { afterPosition } = readAllOptions({ afterPosition: options.afterPosition ?? 0 });
    const count = this.shards.length;
    const cursor = options.after === undefined ? undefined : this.checkCursor(options.after);
    let stopped = false;
    let turn: Promise<unknown> = Promise.resolve();
    const inner: Subscription[] = [];
    const closeAll = () => Promise.all(inner.map((subscription) => subscription.close()));
    const fail = (error: unknown) => {
      if (stopped) return;
      stopped = true;
      void closeAll().catch(() => undefined);
      options.onError?.(error);
    };
    const follow = (positions: readonly number[]) => {
      if (stopped) return;
      this.shards.forEach((store, shard) => {
        inner.push(
          store.subscribe(
            {
              afterPosition: positions[shard] as number,
              ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
              onError: fail,
            },
            (events) => {
              const run = turn.then(() =>
                stopped ? undefined : handler(this.mergedAll(events, shard)),
              );
              turn = run.catch(() => undefined);
              return run;
            },
          ),
        );
      });
    };
    // A cursor, or a position on shard 0 (0 included), needs no read: follow at once.
    const starting =
      cursor !== undefined
        ? follow(cursor.positions)
        : afterPosition % count === 0
          ? follow(
              Array.from({ length: count }, (_, shard) =>
                shard === 0 ? afterPosition / count : 0,
              ),
            )
          : this.cursorAtPosition(afterPosition).then(follow, fail);
    return {
      close: async () => {
        stopped = true;
        await starting;
        await closeAll();
        await turn;
      },
    };
  }

  verify(executionId: string) {
    return this.shardFor(executionId).verify(executionId);
  }

  /** Closes every shard (all are tried; the first failure is rethrown). */
  async close(): Promise<void> {
    const results = await Promise.allSettled(this.shards.map((store) => store.close()));
    const failed = results.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  }
}

/** One request appended on its own, as an outcome: a refusal is its error, a broken store throws. */
async function appendOutcome(store: EventStore, request: AppendRequest): Promise<AppendOutcome> {
  try {
    return { ok: true, stored: await store.append(request.envelopes, request.guard) };
  } catch (error) {
    if (!isLoomError(error)) throw error;
    return { ok: false, error };
  }
}
