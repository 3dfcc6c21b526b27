import type { Approval } from '@loom/agent-loop';
import type { DetailedExecutionStatus } from '@loom/event-runtime';
import { Limits } from '@loom/event-runtime';
import { nextOccurrence } from '@loom/workflow-runtime/cron';
import { sql } from 'kysely';
import { LoomError, ViewErrorCode } from '../errors.js';
import { parseDbUrl } from '../internal/db-url.js';
import { openBackend } from '../internal/open-backend.js';
import type { RunSummary } from '../run-summary.js';
import type { ScheduleSummary } from '../schedule-summary.js';
import {
  createProjectionTables,
  openProjectionDb,
  type ProjectionDb,
  readCheckpoint,
} from './projection-db.js';
import {
  catchUpProjections as catchUpOn,
  type Projector,
  type ProjectorOptions,
  type ProjectorStats,
  startProjector as startOn,
} from './projector.js';

/** Model usage summed over some calls: a run, an agent, a day or a model. */
export interface Spend {
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  /** The sum of the calls whose cost is known. */
  costUsd: number;
  /** Calls of unknown cost (no price for the model, or a count the provider did not report). */
  costUnknownCalls: number;
}

/** A run as the `runs` projection keeps it: the summary plus its model spend. */
export interface ProjectedRun extends RunSummary {
  spend: Spend;
}

/** Filters of `projections.runs()`, as `view.runs()` takes them. */
export interface ProjectedRunsFilter {
  status?: DetailedExecutionStatus;
  /** A flow name, or an agent run's `agent:<name>`. */
  flow?: string;
  /** 1 to 10,000; default 50. */
  limit?: number;
  /** The `nextCursor` of the previous page (a run id). */
  after?: string;
}

/** How `projections.spend()` groups model calls. */
export type SpendGroup = 'run' | 'agent' | 'day' | 'model';

/** What `projections.spend()` sums. */
export interface SpendQuery {
  by: SpendGroup;
  /** Only this agent's runs. */
  agent?: string;
  /** Only these runs. */
  runIds?: readonly string[];
  /** Only calls on or after this UTC day (`YYYY-MM-DD`). */
  fromDay?: string;
  /** Only calls on or before this UTC day (`YYYY-MM-DD`). */
  toDay?: string;
}

/** One group of `projections.spend()`: the run id, agent name, UTC day or model, and its sums. */
export interface SpendRow extends Spend {
  key: string;
}

/** Where the projector stands: the last position it committed and the events it folded. */
export interface ProjectionCheckpoint {
  position: number;
  events: number;
}

/**
 * The projection tables of one database, queried with kysely. Reads only. The rows are as
 * current as the projector that keeps them (see `checkpoint()`); `view.runs()` reads the log
 * itself and is never behind.
 */
export interface Projections {
  /** A page of runs in id order, with their spend: one query. */
  runs(
    filter?: ProjectedRunsFilter,
  ): Promise<{ runs: ProjectedRun[]; nextCursor: string | undefined }>;
  /** Runs per status (`running`, `suspended`, `completed`, …): one query. */
  counts(filter?: { flow?: string }): Promise<Record<string, number>>;
  /** Every approval waiting for a person, oldest request first: one query. */
  pendingApprovals(): Promise<Approval[]>;
  /** Model spend grouped by run, agent, UTC day or model, biggest cost first: one query. */
  spend(query: SpendQuery): Promise<SpendRow[]>;
  /**
   * The schedules that fire (generations not settled), by name, as `view.schedules()` lists
   * them: one query. The next firing is the generation's timer while it sleeps, else the
   * expression's next occurrence after the last firing (or after now, before the first).
   */
  schedules(): Promise<ScheduleSummary[]>;
  checkpoint(): Promise<ProjectionCheckpoint>;
  close(): Promise<void>;
}

const pageDefault = 50;
const settled = ['completed', 'failed', 'cancelled', 'continued'];
const spendGroups: readonly SpendGroup[] = ['run', 'agent', 'day', 'model'];
const dayPattern = /^\d{4}-\d{2}-\d{2}$/;

function invalid(path: string, message: string, actual: unknown): LoomError {
  return new LoomError(ViewErrorCode.INVALID_ARGUMENT, message, { path, actual: String(actual) });
}

function limitOf(limit: number | undefined): number {
  const n = limit ?? pageDefault;
  if (!Number.isInteger(n) || n < 1 || n > Limits.readLimitMax) {
    throw invalid(
      'limit',
      `limit must be an integer from 1 to ${Limits.readLimitMax}, got ${n}`,
      n,
    );
  }
  return n;
}

/** Throws `INVALID_ARGUMENT` for a spend query with a bad group or day. */
export function checkSpendQuery(query: SpendQuery): void {
  if (!spendGroups.includes(query.by)) {
    throw invalid('by', `spend groups by ${spendGroups.join(', ')}; got ${query.by}`, query.by);
  }
  for (const [path, day] of [
    ['fromDay', query.fromDay],
    ['toDay', query.toDay],
  ] as const) {
    if (day !== undefined && !dayPattern.test(day)) {
      throw invalid(path, `${path} must be a UTC day as YYYY-MM-DD, got ${day}`, day);
    }
  }
}

/** The read side over projection tables already opened (and checked). */
export function projectionsOn(opened: ProjectionDb): Projections {
  const { db } = opened;
  return {
    async runs(filter = {}) {
      const limit = limitOf(filter.limit);
      let query = db
        .selectFrom('loom_projection_runs')
        .selectAll()
        .orderBy('id')
        .limit(limit + 1);
      if (filter.status === 'settled') query = query.where('status', 'in', settled);
      else if (filter.status !== undefined) query = query.where('status', '=', filter.status);
      if (filter.flow !== undefined) query = query.where('flow', '=', filter.flow);
      if (filter.after !== undefined) query = query.where('id', '>', filter.after);
      const rows = await query.execute();
      const page = rows.slice(0, limit).map(
        (row): ProjectedRun => ({
          id: row.id,
          kind: row.kind === 'agent' ? 'agent' : 'flow',
          flow: row.flow,
          agent: row.agent,
          version: row.version,
          status: row.status as DetailedExecutionStatus,
          terminalReason: row.terminal_reason,
          steps: row.steps,
          pendingApprovals: row.pending_approvals,
          createdAtMs: Number(row.created_at_ms),
          updatedAtMs: Number(row.updated_at_ms),
          wakeAtMs: row.wake_at_ms === null ? null : Number(row.wake_at_ms),
          spend: {
            modelCalls: row.model_calls,
            inputTokens: Number(row.input_tokens),
            outputTokens: Number(row.output_tokens),
            costUsd: row.cost_usd,
            costUnknownCalls: row.cost_unknown_calls,
          },
        }),
      );
      return {
        runs: page,
        nextCursor: rows.length > limit ? page[page.length - 1]?.id : undefined,
      };
    },
    async counts(filter = {}) {
      let query = db
        .selectFrom('loom_projection_runs')
        .select((eb) => ['status', eb.fn.countAll<number | string>().as('n')])
        .groupBy('status');
      if (filter.flow !== undefined) query = query.where('flow', '=', filter.flow);
      const out: Record<string, number> = {};
      for (const row of await query.execute()) out[row.status] = Number(row.n);
      return out;
    },
    async pendingApprovals() {
      const rows = await db
        .selectFrom('loom_projection_approvals')
        .select('approval')
        .where('status', '=', 'pending')
        .orderBy('requested_at_ms')
        .orderBy('id')
        .execute();
      return rows.map((row) => JSON.parse(row.approval) as Approval);
    },
    async spend(query) {
      checkSpendQuery(query);
      const key = ({ run: 'run_id', agent: 'agent', day: 'day', model: 'model' } as const)[
        query.by
      ];
      let select = db
        .selectFrom('loom_projection_model_calls')
        .select((eb) => [
          eb.fn.coalesce(eb.ref(key), sql.lit('')).as('key'),
          eb.fn.countAll<number | string>().as('calls'),
          eb.fn.count<number | string>('cost_usd').as('priced'),
          eb.fn.sum<number | string | null>('input_tokens').as('input_tokens'),
          eb.fn.sum<number | string | null>('output_tokens').as('output_tokens'),
          // 0 for a group whose costs are all unknown (a SUM of nulls is NULL): Postgres sorts a
          // NULL first in a descending order and SQLite last; 0 sorts the same on both.
          eb.fn.coalesce(eb.fn.sum<number | string | null>('cost_usd'), sql.lit(0)).as('cost_usd'),
        ])
        .groupBy(key)
        .orderBy('cost_usd', 'desc')
        .orderBy('key');
      if (query.agent !== undefined) select = select.where('agent', '=', query.agent);
      if (query.runIds !== undefined) {
        if (query.runIds.length === 0) return [];
        select = select.where('run_id', 'in', [...query.runIds]);
      }
      if (query.fromDay !== undefined) select = select.where('day', '>=', query.fromDay);
      if (query.toDay !== undefined) select = select.where('day', '<=', query.toDay);
      const rows = await select.execute();
      return rows.map((row) => ({
        key: String(row.key),
        modelCalls: Number(row.calls),
        inputTokens: Number(row.input_tokens ?? 0),
        outputTokens: Number(row.output_tokens ?? 0),
        costUsd: Number(row.cost_usd ?? 0),
        costUnknownCalls: Number(row.calls) - Number(row.priced),
      }));
    },
    async schedules() {
      const rows = await db
        .selectFrom('loom_projection_schedules')
        .selectAll()
        .where('status', 'not in', settled)
        .orderBy('name')
        .orderBy('execution_id')
        .execute();
      const out = rows.map((row): ScheduleSummary => {
        const lastFiredAtMs = row.last_fired_at_ms === null ? null : Number(row.last_fired_at_ms);
        return {
          name: row.name,
          executionId: row.execution_id,
          expression: row.expression,
          timezone: row.timezone,
          flow: row.flow,
          version: row.version,
          nextFireAtMs:
            row.wake_at_ms === null
              ? nextOccurrence(row.expression, lastFiredAtMs ?? Date.now(), row.timezone)
              : Number(row.wake_at_ms),
          lastFiredAtMs,
          lastRunId: row.last_run_id,
        };
      });
      // The order view.schedules() gives (the SQL order is binary, this one the locale's).
      return out.sort((a, b) => a.name.localeCompare(b.name));
    },
    checkpoint: () => readCheckpoint(opened),
    close: () => opened.close(),
  };
}

/**
 * Opens the projection tables of the database at `db` to read them. Never creates or migrates
 * anything: a database without them is `PROJECTIONS_NOT_INITIALIZED`, naming the command that
 * creates them (`loom projections init`), and nothing is written.
 *
 * Error codes: `INVALID_DB_URL`, `PROJECTIONS_NOT_INITIALIZED`, `DRIVER_MISSING`, store errors.
 *
 * @example
 * const projections = await openProjections({ db: 'sqlite:./loom.db' });
 * const byDay = await projections.spend({ by: 'day' });
 * await projections.close();
 */
export async function openProjections(options: { db: string }): Promise<Projections> {
  const target = parseDbUrl(options.db);
  // The store's check first: a missing file or unmigrated database says so, as openView does.
  await (await openBackend(target, true)).close();
  const opened = await openProjectionDb(target, true);
  try {
    await readCheckpoint(opened);
  } catch (error) {
    await opened.close();
    throw error;
  }
  return projectionsOn(opened);
}

/**
 * Creates the projection tables (and their checkpoint at position 0) in the database at `db`,
 * beside a migrated Loom store; a database that has them is left as it is. The explicit setup
 * step: nothing else creates them.
 *
 * Error codes: `INVALID_DB_URL`, `SCHEMA_NOT_MIGRATED` (migrate the store first),
 * `STORE_UNAVAILABLE`, `DRIVER_MISSING`.
 */
export async function initProjections(options: { db: string }): Promise<{ created: boolean }> {
  const target = parseDbUrl(options.db);
  await (await openBackend(target, true)).close();
  const opened = await openProjectionDb(target, false);
  try {
    return { created: await createProjectionTables(opened) };
  } finally {
    await opened.close();
  }
}

/** What {@link startProjector} and {@link catchUpProjections} take: a URL, or stores you opened. */
export type ProjectorTarget =
  | { db: string; batchSize?: number; onFlush?: ProjectorOptions['onFlush'] }
  | ProjectorOptions;

async function opened(
  target: ProjectorTarget,
): Promise<{ options: ProjectorOptions; close: () => Promise<void> }> {
  if (!('db' in target)) return { options: target, close: async () => {} };
  let closing: Promise<void> | undefined;
  const url = parseDbUrl(target.db);
  const backend = await openBackend(url, true);
  let projections: ProjectionDb;
  try {
    projections = await openProjectionDb(url, false);
  } catch (error) {
    await backend.close();
    throw error;
  }
  return {
    options: {
      events: backend.events,
      projections,
      ...(target.batchSize === undefined ? {} : { batchSize: target.batchSize }),
      ...(target.onFlush === undefined ? {} : { onFlush: target.onFlush }),
    },
    // Once: the projector's end and its close() both call it.
    close: () => {
      closing ??= projections.close().finally(() => backend.close());
      return closing;
    },
  };
}

/**
 * Starts a projector: it folds the global log into the projection tables from their checkpoint
 * on, one transaction per delivered batch, until `close()`. Given `db`, it opens (and on close
 * closes) the store read-only and the projection tables for writing.
 *
 * Error codes: `PROJECTIONS_NOT_INITIALIZED`, `INVALID_ARGUMENT`, `INVALID_DB_URL`, store errors;
 * later, through `done`: `PROJECTOR_CONFLICT`, store errors.
 *
 * @example
 * const projector = await startProjector({ db: 'sqlite:./loom.db' });
 * // … later
 * await projector.close();
 */
export async function startProjector(target: ProjectorTarget): Promise<Projector> {
  const { options, close } = await opened(target);
  let projector: Projector;
  try {
    projector = await startOn(options);
  } catch (error) {
    await close();
    throw error;
  }
  return {
    stats: projector.stats,
    done: projector.done.finally(close),
    close: async () => {
      await projector.close();
      await projector.done.catch(() => undefined);
      await close();
    },
  };
}

/** Folds everything up to the log's current end and returns (`loom projections run --once`). */
export async function catchUpProjections(target: ProjectorTarget): Promise<ProjectorStats> {
  const { options, close } = await opened(target);
  try {
    return await catchUpOn(options);
  } finally {
    await close();
  }
}
