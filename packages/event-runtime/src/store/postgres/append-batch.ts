import type { StoredEvent } from '../../envelope.js';
import { isLoomError, type LoomError } from '../../errors.js';
import type { AppendOutcome, AppendRequest } from '../../event-store.js';
import { chainEvents, type PreparedAppend } from '../../internal/prepare-append.js';
import { prepareBatch } from '../../internal/prepare-batch.js';
import { alreadyStarted, fenceStale, sequenceConflict } from '../../internal/store-errors.js';
import {
  appendBatchValues,
  type BatchAppendedRow,
  type ChainedAppend,
} from './append-batch-statement.js';
import { classifyPgError } from './pg-errors.js';
import type { PgStatement } from './pg-statement.js';

/** What {@link appendBatch} needs of the Postgres store it runs in. */
export interface AppendBatchContext {
  now(): number;
  statements: { appendBatch: PgStatement; hashesAt: PgStatement };
  /** The tail cache: the hash of `sequence` of the execution, if known. */
  cachedHash(executionId: string, sequence: number): string | undefined;
  remember(executionId: string, sequence: number, hash: string): void;
  /** One counted round trip on the pool, driver errors raw (23505 must stay visible). */
  send<R>(statement: PgStatement, values: unknown[]): Promise<R[]>;
  mapError(error: unknown, operation: string): LoomError;
  nextSequence(executionId: string): Promise<number>;
  /** The single-execution append: the fallback after a race the batch statement could not see. */
  appendOne(request: AppendRequest): Promise<StoredEvent[]>;
  /** True (always, outside the package's tests): a batch of one takes the plain append. */
  batchOfOnePlain(): boolean;
  /** Reports a committed append (tail cache, local wake-ups, the post-commit notifier). */
  appended(stored: readonly StoredEvent[]): void;
}

interface Pending extends ChainedAppend {
  index: number;
}

/**
 * `PostgresEventStore.appendBatch`: validates every request on its own, looks up the missing
 * previous hashes in one round trip, and sends the appends of all executions as one statement
 * (one transaction, one commit). Refusals come back per execution; a unique violation (a
 * concurrent writer on one of the executions, not yet committed when the statement started) or a
 * lock conflict aborts the statement, and then each request is appended on its own, so the
 * others still commit.
 */
export async function appendBatch(
  context: AppendBatchContext,
  requests: readonly AppendRequest[],
): Promise<AppendOutcome[]> {
  const outcomes: AppendOutcome[] = new Array(requests.length);
  const fail = (index: number, error: unknown) => {
    outcomes[index] = {
      ok: false,
      error: isLoomError(error) ? error : context.mapError(error, 'append'),
    };
  };
  if (requests.length === 1 && context.batchOfOnePlain()) {
    // Nothing to merge: the single append's statement is the cheaper one (measured at c = 1).
    try {
      outcomes[0] = { ok: true, stored: await context.appendOne(requests[0] as AppendRequest) };
    } catch (error) {
      fail(0, error);
    }
    return outcomes;
  }
  const prepared = prepareBatch(requests, context.now(), fail);
  const hashes = await previousHashes(context, prepared).catch((error: unknown) => {
    for (const [index] of prepared) fail(index, error);
    return undefined;
  });
  if (hashes === undefined) return outcomes;
  const chained: Pending[] = [];
  for (const [index, append] of prepared) {
    const { executionId, firstSequence } = append;
    const prevHash = firstSequence === 0 ? null : hashes.get(executionId);
    if (prevHash === undefined) {
      try {
        fail(
          index,
          sequenceConflict(executionId, await context.nextSequence(executionId), firstSequence),
        );
      } catch (error) {
        fail(index, error);
      }
      continue;
    }
    chained.push({ index, prepared: append, stored: chainEvents(append, prevHash) });
  }
  if (chained.length === 0) return outcomes;
  // One lock order for every batch (fence rows, keys, index rows): two batches that share
  // executions wait for each other instead of deadlocking.
  chained.sort((a, b) =>
    a.prepared.executionId < b.prepared.executionId
      ? -1
      : a.prepared.executionId > b.prepared.executionId
        ? 1
        : 0,
  );
  let rows: BatchAppendedRow[];
  try {
    rows = await context.send<BatchAppendedRow>(
      context.statements.appendBatch,
      appendBatchValues(chained),
    );
  } catch (error) {
    // A unique violation (a racing writer on one execution) or a lock conflict (deadlock,
    // lock timeout) belongs to one execution, not to the batch: append each one alone.
    const kind = classifyPgError(error);
    if (kind !== 'unique_violation' && kind !== 'busy') {
      const mapped = context.mapError(error, 'append');
      for (const pending of chained) fail(pending.index, mapped);
      return outcomes;
    }
    await Promise.all(
      chained.map(async (pending) => {
        try {
          const stored = await context.appendOne(requests[pending.index] as AppendRequest);
          outcomes[pending.index] = { ok: true, stored };
        } catch (caught) {
          fail(pending.index, caught);
        }
      }),
    );
    return outcomes;
  }
  settle(context, chained, rows, outcomes);
  return outcomes;
}

/** The hash before each append's first event: from the tail cache, the rest in one round trip. */
async function previousHashes(
  context: AppendBatchContext,
  prepared: ReadonlyMap<number, PreparedAppend>,
): Promise<Map<string, string>> {
  const hashes = new Map<string, string>();
  const missingIds: string[] = [];
  const missingSequences: number[] = [];
  for (const { executionId, firstSequence } of prepared.values()) {
    if (firstSequence === 0) continue;
    const cached = context.cachedHash(executionId, firstSequence - 1);
    if (cached !== undefined) {
      hashes.set(executionId, cached);
      continue;
    }
    missingIds.push(executionId);
    missingSequences.push(firstSequence - 1);
  }
  if (missingIds.length === 0) return hashes;
  const rows = await context.send<{ execution_id: string; hash: string }>(
    context.statements.hashesAt,
    [missingIds, missingSequences],
  );
  const wanted = new Map(missingIds.map((id, at) => [id, missingSequences[at] as number]));
  for (const row of rows) {
    hashes.set(row.execution_id, row.hash);
    context.remember(row.execution_id, wanted.get(row.execution_id) as number, row.hash);
  }
  return hashes;
}

/** Turns the statement's rows into outcomes: positions for the committed, errors for the refused. */
function settle(
  context: AppendBatchContext,
  chained: readonly Pending[],
  rows: readonly BatchAppendedRow[],
  outcomes: AppendOutcome[],
): void {
  const byId = new Map(chained.map((pending) => [pending.prepared.executionId, pending]));
  const refused = new Map<string, BatchAppendedRow>();
  const inserted = new Map<string, number>();
  for (const row of rows) {
    if (row.sequence === null) {
      refused.set(row.execution_id, row);
      continue;
    }
    const pending = byId.get(row.execution_id);
    if (pending === undefined)
      throw new Error(`invariant: appendBatch inserted ${row.execution_id}`);
    const event = pending.stored[Number(row.sequence) - pending.prepared.firstSequence];
    if (event === undefined) throw new Error('invariant: appendBatch inserted an unknown sequence');
    event.position = Number(row.position);
    inserted.set(row.execution_id, (inserted.get(row.execution_id) ?? 0) + 1);
  }
  for (const { index, prepared, stored } of chained) {
    const { executionId, firstSequence, fenceEpoch } = prepared;
    const refusal = refused.get(executionId);
    if (refusal !== undefined) {
      const epoch = refusal.epoch === null ? undefined : Number(refusal.epoch);
      let error: LoomError;
      if (fenceEpoch !== undefined && epoch !== undefined && epoch !== fenceEpoch) {
        error = fenceStale(executionId, epoch, fenceEpoch);
      } else if (firstSequence === 0) {
        error = alreadyStarted(executionId);
      } else {
        error = sequenceConflict(executionId, Number(refusal.next ?? 0), firstSequence);
      }
      outcomes[index] = { ok: false, error };
      continue;
    }
    if (inserted.get(executionId) !== stored.length) {
      throw new Error(
        `invariant: appendBatch inserted ${inserted.get(executionId) ?? 0} of ${stored.length} rows of ${executionId}`,
      );
    }
    context.appended(stored);
    outcomes[index] = { ok: true, stored };
  }
}
