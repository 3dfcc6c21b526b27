import type { JsonValue, PrunedExecution } from '../envelope.js';
import { ErrorCode, isLoomError, LoomError } from '../errors.js';
import type { EventStore } from '../event-store.js';
import { Limits } from '../limits.js';
import type { SnapshotStore } from '../snapshot-store.js';
import { EventType } from './core/kernel-events.js';
import { checkPayload } from './core/kernel-payload.js';
import { loadState } from './load-state.js';

/**
 * The execution whose log holds the prune receipts: one `loom.pruned` event per batch, chained
 * like any log, so `verify` proves no receipt was edited (ADR 0053). Never in the execution
 * index (its first event is not an `execution.started`): no runtime drives it and no prune
 * removes it.
 */
export const pruneReceiptLogId = 'loom.pruned';

/** The type of a receipt event in {@link pruneReceiptLogId}. */
export const pruneReceiptType = 'loom.pruned';

/**
 * Most executions one prune call takes: one receipt lists them all, ~200 bytes each, so a batch
 * stays far below `Limits.payloadBytesMax` (1 MiB).
 */
export const pruneBatchMax = 1_000;

/** Default executions per prune call. */
export const pruneBatchDefault = 100;

/** Tries at appending a receipt when another prune appended one at the same sequence. */
const receiptAppendTries = 5;

/** What {@link pruneExecutions} removes. */
export interface PruneExecutionsOptions {
  /** Settled executions whose status last changed before this instant (epoch ms, exclusive). */
  endedBeforeMs: number;
  /** Most executions this call looks at, 1 to {@link pruneBatchMax}. Default 100. */
  limit?: number;
  /** Look only at executions whose id sorts after this one: the previous call's `nextCursor`. */
  cursor?: string;
  /** Choose and check, but write no receipt and remove nothing. */
  dryRun?: boolean;
}

/** Why a settled execution that ended before the time was not removed. */
export type PruneSkipReason =
  /** Its parent has not settled: the parent reads its outcome from its log. */
  | 'parent_unsettled'
  /** Its hash chain does not check out: removing it would destroy the evidence. */
  | 'chain_broken'
  /** The receipt listed it, but the store did not remove it (another writer held its row). */
  | 'not_removed';

/** What one {@link pruneExecutions} call did. */
export interface PruneReport {
  /** What was removed (on a dry run: what would be). */
  pruned: PrunedExecution[];
  skipped: Array<{ executionId: string; reason: PruneSkipReason }>;
  /** The receipt's sequence in {@link pruneReceiptLogId}; null when nothing was removed. */
  receiptSequence: number | null;
  /** Pass it as `cursor` to go on; undefined when no settled execution is left to look at. */
  nextCursor: string | undefined;
}

/** The payload of a receipt event. */
export interface PruneReceipt {
  endedBeforeMs: number;
  executions: PrunedExecution[];
}

/**
 * Removes settled executions that ended before `endedBeforeMs`, one batch per call, behind a
 * receipt (ADR 0053): each candidate's chain is verified first (a broken one is kept as
 * evidence), a child whose parent has not settled is kept (the parent reads its outcome from its
 * log), then one `loom.pruned` event listing every chosen id with its event count and last hash
 * is appended to {@link pruneReceiptLogId}, and only then does the store remove them. A crash
 * between the two leaves a receipt for executions still there (verified as usual, listed again
 * by the next prune), never an execution gone without a receipt. Running and suspended
 * executions are never touched: the store removes settled ones only.
 *
 * Costs a read of each candidate's whole log (the verify) and of each distinct parent's state.
 *
 * Error codes: `INVALID_ARGUMENT` (bad options), `STORE_READ_ONLY`, store errors.
 */
export async function pruneExecutions(
  store: EventStore,
  snapshots: SnapshotStore | undefined,
  options: PruneExecutionsOptions,
  nowMs: number,
): Promise<PruneReport> {
  const { endedBeforeMs, limit, cursor, dryRun } = checkOptions(options);
  const candidates = await store.findExecutions({
    status: 'settled',
    updatedBeforeMs: endedBeforeMs,
    limit,
    ...(cursor === undefined ? {} : { afterExecutionId: cursor }),
  });
  const nextCursor =
    candidates.length < limit ? undefined : candidates[candidates.length - 1]?.executionId;
  const chosen: PrunedExecution[] = [];
  const skipped: PruneReport['skipped'] = [];
  const parents = new Map<string, boolean>();
  for (const { executionId } of candidates) {
    if (!(await parentSettled(store, snapshots, executionId, parents))) {
      skipped.push({ executionId, reason: 'parent_unsettled' });
      continue;
    }
    const verified = await store.verify(executionId);
    if (!verified.ok || verified.lastHash === null) {
      skipped.push({ executionId, reason: 'chain_broken' });
      continue;
    }
    chosen.push({ executionId, events: verified.events, lastHash: verified.lastHash });
  }
  if (dryRun || chosen.length === 0) {
    return { pruned: chosen, skipped, receiptSequence: null, nextCursor };
  }
  const receiptSequence = await appendReceipt(store, { endedBeforeMs, executions: chosen }, nowMs);
  const removed = await store.prune({
    endedBeforeMs,
    executionIds: chosen.map((row) => row.executionId),
    limit: chosen.length,
  });
  const removedIds = new Set(removed.map((row) => row.executionId));
  for (const row of chosen) {
    if (!removedIds.has(row.executionId)) {
      skipped.push({ executionId: row.executionId, reason: 'not_removed' });
    }
  }
  await snapshots?.forget?.([...removedIds]);
  return { pruned: removed, skipped, receiptSequence, nextCursor };
}

/** True unless the execution is a child whose parent is still in the log and not settled. */
async function parentSettled(
  store: EventStore,
  snapshots: SnapshotStore | undefined,
  executionId: string,
  known: Map<string, boolean>,
): Promise<boolean> {
  const [first] = await store.read(executionId, { limit: 1 });
  if (first === undefined || first.type !== EventType.executionStarted) return true;
  const parentId = checkPayload[EventType.executionStarted](first).parent?.executionId;
  if (parentId === undefined) return true;
  let settled = known.get(parentId);
  if (settled === undefined) {
    const { state } = await loadState(store, snapshots, parentId);
    settled = state === undefined || state.status !== 'running';
    known.set(parentId, settled);
  }
  return settled;
}

/** Appends the receipt at the receipt log's next sequence; another prune's receipt moves it on. */
async function appendReceipt(store: EventStore, receipt: PruneReceipt, nowMs: number) {
  for (let attempt = 1; ; attempt++) {
    const sequence = await nextSequence(store);
    try {
      await store.append([
        {
          executionId: pruneReceiptLogId,
          sequence,
          type: pruneReceiptType,
          payload: receipt as unknown as JsonValue,
          at: nowMs,
        },
      ]);
      return sequence;
    } catch (error) {
      const clash =
        isLoomError(error) &&
        (error.code === ErrorCode.SEQUENCE_CONFLICT ||
          error.code === ErrorCode.EXECUTION_ALREADY_STARTED);
      if (!clash || attempt >= receiptAppendTries) throw error;
    }
  }
}

/** The receipt log's next sequence, read page by page (one event per prune batch). */
async function nextSequence(store: EventStore): Promise<number> {
  let next = 0;
  for (;;) {
    const page = await store.read(pruneReceiptLogId, {
      fromSequence: next,
      limit: Limits.readLimitMax,
    });
    next += page.length;
    if (page.length < Limits.readLimitMax) return next;
  }
}

function checkOptions(options: PruneExecutionsOptions): Required<
  Omit<PruneExecutionsOptions, 'cursor'>
> & {
  cursor: string | undefined;
} {
  if (typeof options !== 'object' || options === null) {
    throw invalid('options', 'prune takes { endedBeforeMs, limit?, cursor?, dryRun? }');
  }
  const { endedBeforeMs, limit = pruneBatchDefault, cursor, dryRun = false } = options;
  if (
    typeof endedBeforeMs !== 'number' ||
    !Number.isSafeInteger(endedBeforeMs) ||
    endedBeforeMs < 0
  ) {
    throw invalid(
      'endedBeforeMs',
      `prune's endedBefore must be a non-negative integer of epoch ms (or a Date), got ${String(endedBeforeMs)}`,
    );
  }
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > pruneBatchMax) {
    throw invalid(
      'limit',
      `prune's limit must be an integer from 1 to ${pruneBatchMax}, got ${String(limit)}: one receipt lists one batch`,
    );
  }
  if (cursor !== undefined && (typeof cursor !== 'string' || cursor.length === 0)) {
    throw invalid('cursor', "prune's cursor must be the nextCursor of a previous call");
  }
  if (typeof dryRun !== 'boolean') throw invalid('dryRun', "prune's dryRun must be a boolean");
  return { endedBeforeMs, limit, cursor, dryRun };
}

function invalid(path: string, message: string): LoomError {
  return new LoomError(ErrorCode.INVALID_ARGUMENT, message, { path });
}
