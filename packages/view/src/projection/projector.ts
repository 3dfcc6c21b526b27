import {
  type EventStore,
  type PruneReceipt,
  pruneReceiptLogId,
  type StoredEvent,
  type Subscription,
} from '@loom/event-runtime';
import { type Kysely, sql } from 'kysely';
import { LoomError, ViewErrorCode } from '../errors.js';
import {
  type ApprovalRow,
  type FoldInput,
  foldBatch,
  type RunRow,
  type ScheduleRow,
} from './fold-batch.js';
import { type ProjectionDb, readCheckpoint, writeTransaction } from './projection-db.js';
import { checkpointName, type ProjectionDatabase } from './tables.js';

/** Default most events per flush (one transaction): the store subscription's batch. */
export const projectorBatchDefault = 500;

/** Rows per `IN (…)` list and per multi-row insert: below SQLite's 32,766 bound variables. */
const rowsPerStatement = 500;

/** Counters of a projector since it started. */
export interface ProjectorStats {
  /** Batches delivered and committed (one transaction each). */
  flushes: number;
  /** Events delivered (redeliveries included). */
  delivered: number;
  /** Events folded (redeliveries skipped). */
  applied: number;
  /** The checkpoint: the position of the last event committed. */
  position: number;
}

/** A running projector: folds each batch the subscription delivers, then checkpoints it. */
export interface Projector {
  readonly stats: Readonly<ProjectorStats>;
  /** Resolves when it stops: after `close()`, or rejects with the error that stopped it. */
  readonly done: Promise<void>;
  /** Stops the subscription; resolves once no batch is being written. */
  close(): Promise<void>;
}

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += rowsPerStatement) {
    out.push(items.slice(i, i + rowsPerStatement));
  }
  return out;
}

function runRowOf(row: Record<string, unknown>): RunRow {
  const out = { ...row } as unknown as RunRow;
  for (const key of ['input_tokens', 'output_tokens', 'created_at_ms', 'updated_at_ms'] as const) {
    out[key] = Number(row[key]);
  }
  out.wake_at_ms = row.wake_at_ms === null ? null : Number(row.wake_at_ms);
  return out;
}

/** The rows of the batch's runs before it: one query per table (per 500 runs). */
async function foldInput(
  trx: Kysely<ProjectionDatabase>,
  ids: readonly string[],
): Promise<FoldInput> {
  const input: FoldInput = { runs: new Map(), pendingApprovals: new Map(), schedules: new Map() };
  for (const part of chunks(ids)) {
    const runs = await trx
      .selectFrom('loom_projection_runs')
      .selectAll()
      .where('id', 'in', part)
      .execute();
    for (const row of runs) input.runs.set(row.id, runRowOf(row));
    const pending = await trx
      .selectFrom('loom_projection_approvals')
      .selectAll()
      .where('run_id', 'in', part)
      .where('status', '=', 'pending')
      .execute();
    for (const row of pending) {
      const approval: ApprovalRow = {
        ...row,
        requested_at_ms: Number(row.requested_at_ms),
        expires_at_ms: row.expires_at_ms === null ? null : Number(row.expires_at_ms),
      };
      let byName = input.pendingApprovals.get(row.run_id);
      if (byName === undefined) {
        byName = new Map();
        input.pendingApprovals.set(row.run_id, byName);
      }
      byName.set(row.name, approval);
    }
    const schedules = await trx
      .selectFrom('loom_projection_schedules')
      .selectAll()
      .where('execution_id', 'in', part)
      .execute();
    for (const row of schedules) {
      const schedule: ScheduleRow = {
        ...row,
        wake_at_ms: row.wake_at_ms === null ? null : Number(row.wake_at_ms),
        last_fired_at_ms: row.last_fired_at_ms === null ? null : Number(row.last_fired_at_ms),
      };
      input.schedules?.set(row.execution_id, schedule);
    }
  }
  return input;
}

/**
 * Folds one batch of the global log into the projection tables and moves the checkpoint to its
 * last event, in one transaction. `expectedPosition` is the checkpoint the caller read before:
 * if another projector moved it meanwhile the transaction rolls back with `PROJECTOR_CONFLICT`.
 * Redelivered events change nothing. Returns the events folded.
 */
export async function applyBatch(
  projections: ProjectionDb,
  events: readonly StoredEvent[],
  expectedPosition: number,
): Promise<number> {
  const last = events[events.length - 1];
  if (last === undefined) return 0;
  return writeTransaction(projections, async (trx) => {
    let applied = 0;
    // A prune receipt (ADR 0053) drops the rows of the runs it lists, in log order: after the
    // events before it, before any event of an id started again after the prune.
    let segment: StoredEvent[] = [];
    for (const event of events) {
      if (event.executionId !== pruneReceiptLogId) {
        segment.push(event);
        continue;
      }
      applied += await writeFolded(trx, segment);
      segment = [];
      await forgetRuns(trx, event);
    }
    applied += await writeFolded(trx, segment);
    const moved = await trx
      .updateTable('loom_projection_checkpoints')
      .set({
        position: last.position,
        events: sql<number>`events + ${applied}`,
        updated_at_ms: Date.now(),
      })
      .where('name', '=', checkpointName)
      .where('position', '=', expectedPosition)
      .executeTakeFirst();
    if (Number(moved.numUpdatedRows) !== 1) {
      throw new LoomError(
        ViewErrorCode.PROJECTOR_CONFLICT,
        `the projection checkpoint is no longer at position ${expectedPosition}: another projector writes these tables; run one 'loom projections run' per database`,
        { expectedPosition },
      );
    }
    return applied;
  });
}

/** Folds events (none of them a receipt) into the tables; returns how many were applied. */
async function writeFolded(trx: Kysely<ProjectionDatabase>, events: readonly StoredEvent[]) {
  if (events.length === 0) return 0;
  const ids = [...new Set(events.map((e) => e.executionId))];
  const folded = foldBatch(events, await foldInput(trx, ids));
  for (const part of chunks(folded.runs)) {
    await trx
      .insertInto('loom_projection_runs')
      .values(part)
      .onConflict((oc) =>
        oc.column('id').doUpdateSet((eb) => ({
          kind: eb.ref('excluded.kind'),
          flow: eb.ref('excluded.flow'),
          agent: eb.ref('excluded.agent'),
          version: eb.ref('excluded.version'),
          status: eb.ref('excluded.status'),
          terminal_reason: eb.ref('excluded.terminal_reason'),
          steps: eb.ref('excluded.steps'),
          open_steps: eb.ref('excluded.open_steps'),
          pending_approvals: eb.ref('excluded.pending_approvals'),
          model_calls: eb.ref('excluded.model_calls'),
          input_tokens: eb.ref('excluded.input_tokens'),
          output_tokens: eb.ref('excluded.output_tokens'),
          cost_usd: eb.ref('excluded.cost_usd'),
          cost_unknown_calls: eb.ref('excluded.cost_unknown_calls'),
          created_at_ms: eb.ref('excluded.created_at_ms'),
          updated_at_ms: eb.ref('excluded.updated_at_ms'),
          wake_at_ms: eb.ref('excluded.wake_at_ms'),
          last_sequence: eb.ref('excluded.last_sequence'),
        })),
      )
      .execute();
  }
  for (const part of chunks(folded.approvals)) {
    await trx
      .insertInto('loom_projection_approvals')
      .values(part)
      .onConflict((oc) =>
        oc.column('id').doUpdateSet((eb) => ({
          status: eb.ref('excluded.status'),
          decided_by: eb.ref('excluded.decided_by'),
        })),
      )
      .execute();
  }
  for (const part of chunks(folded.modelCalls)) {
    await trx
      .insertInto('loom_projection_model_calls')
      .values(part)
      .onConflict((oc) => oc.columns(['run_id', 'sequence']).doNothing())
      .execute();
  }
  for (const part of chunks(folded.schedules)) {
    await trx
      .insertInto('loom_projection_schedules')
      .values(part)
      .onConflict((oc) =>
        oc.column('execution_id').doUpdateSet((eb) => ({
          name: eb.ref('excluded.name'),
          expression: eb.ref('excluded.expression'),
          timezone: eb.ref('excluded.timezone'),
          flow: eb.ref('excluded.flow'),
          version: eb.ref('excluded.version'),
          status: eb.ref('excluded.status'),
          wake_at_ms: eb.ref('excluded.wake_at_ms'),
          last_fired_at_ms: eb.ref('excluded.last_fired_at_ms'),
          last_run_id: eb.ref('excluded.last_run_id'),
        })),
      )
      .execute();
  }
  return folded.applied;
}

/**
 * Drops the rows of the runs a prune receipt lists: their run, approvals and schedule rows. Their
 * model calls stay: they are the spend history `loom spend` sums by day.
 */
async function forgetRuns(trx: Kysely<ProjectionDatabase>, receipt: StoredEvent): Promise<void> {
  const listed = (receipt.payload as Partial<PruneReceipt> | null)?.executions;
  const ids = (Array.isArray(listed) ? listed : [])
    .map((row) => row?.executionId)
    .filter((id): id is string => typeof id === 'string');
  for (const part of chunks(ids)) {
    await trx.deleteFrom('loom_projection_runs').where('id', 'in', part).execute();
    await trx.deleteFrom('loom_projection_approvals').where('run_id', 'in', part).execute();
    await trx.deleteFrom('loom_projection_schedules').where('execution_id', 'in', part).execute();
  }
}

/** Options of {@link startProjector} and {@link catchUpProjections}. */
export interface ProjectorOptions {
  /** The store whose global log is folded. */
  events: EventStore;
  /** Where the projection tables are (created beforehand by `initProjections`). */
  projections: ProjectionDb;
  /** Most events per flush (transaction). 1 to 10,000; default {@link projectorBatchDefault}. */
  batchSize?: number;
  /** Called after each committed flush. */
  onFlush?: (stats: Readonly<ProjectorStats>, batch: readonly StoredEvent[]) => void;
}

function batchSizeOf(batchSize: number | undefined): number {
  const size = batchSize ?? projectorBatchDefault;
  if (!Number.isInteger(size) || size < 1 || size > 10_000) {
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      `batchSize must be an integer from 1 to 10,000, got ${size}`,
      { path: 'batchSize', actual: String(size) },
    );
  }
  return size;
}

/** One flush: the batch and the checkpoint in one transaction, then the counters. */
function flusher(
  options: ProjectorOptions,
  stats: ProjectorStats,
): (batch: StoredEvent[]) => Promise<void> {
  return async (batch) => {
    stats.applied += await applyBatch(options.projections, batch, stats.position);
    stats.flushes += 1;
    stats.delivered += batch.length;
    stats.position = (batch[batch.length - 1] as StoredEvent).position;
    options.onFlush?.(stats, batch);
  };
}

/**
 * Keeps the projection tables current: subscribes to the store's global log after the
 * checkpoint and folds each delivered batch in one transaction with the checkpoint. A restart
 * resumes from the checkpoint; the store's subscription coalesces a burst of appends into few
 * batches (one read per wake-up while a batch is being written, at most `batchSize` events).
 *
 * Error codes: `PROJECTIONS_NOT_INITIALIZED`, `INVALID_ARGUMENT`; later, through `done`:
 * `PROJECTOR_CONFLICT`, store errors.
 */
export async function startProjector(options: ProjectorOptions): Promise<Projector> {
  const batchSize = batchSizeOf(options.batchSize);
  const checkpoint = await readCheckpoint(options.projections);
  const stats: ProjectorStats = {
    flushes: 0,
    delivered: 0,
    applied: 0,
    position: checkpoint.position,
  };
  let stop: (error?: unknown) => void = () => {};
  const done = new Promise<void>((resolve, reject) => {
    stop = (error) => (error === undefined ? resolve() : reject(error));
  });
  const subscription: Subscription = options.events.subscribe(
    { afterPosition: checkpoint.position, batchSize, onError: (error) => stop(error) },
    flusher(options, stats),
  );
  return {
    stats,
    done,
    close: async () => {
      await subscription.close();
      stop();
    },
  };
}

/**
 * Folds everything after the checkpoint up to the log's current end, in batches, and returns
 * (what `loom projections run --once` does). Error codes: as {@link startProjector}.
 */
export async function catchUpProjections(options: ProjectorOptions): Promise<ProjectorStats> {
  const batchSize = batchSizeOf(options.batchSize);
  const checkpoint = await readCheckpoint(options.projections);
  const stats: ProjectorStats = {
    flushes: 0,
    delivered: 0,
    applied: 0,
    position: checkpoint.position,
  };
  const flush = flusher(options, stats);
  for (;;) {
    const batch = await options.events.readAll({ afterPosition: stats.position, limit: batchSize });
    if (batch.length === 0) return stats;
    await flush(batch);
  }
}
