import type { ColumnType } from 'kysely';

/**
 * A BIGINT column: `pg` returns int8 as a string, better-sqlite3 as a number. Reads normalize
 * with `Number()` (every value here — epoch ms, counts, positions — fits a double exactly).
 */
type Int8 = ColumnType<number | string, number, number>;

/** One row per run (execution): the summary `loom runs` lists, kept by the projector. */
export interface ProjectionRunsTable {
  id: string;
  kind: string;
  flow: string | null;
  agent: string | null;
  version: string | null;
  status: string;
  terminal_reason: string | null;
  steps: number;
  /** JSON array of the step indexes started and not yet ended (a retry's start is not a new step). */
  open_steps: string;
  pending_approvals: number;
  model_calls: number;
  input_tokens: Int8;
  output_tokens: Int8;
  cost_usd: number;
  cost_unknown_calls: number;
  created_at_ms: Int8;
  updated_at_ms: Int8;
  wake_at_ms: Int8 | null;
  /** The run's newest sequence folded in: an event at or below it is a redelivery, skipped. */
  last_sequence: number;
}

/** One row per approval an agent run asked for. */
export interface ProjectionApprovalsTable {
  id: string;
  run_id: string;
  /** The step and signal name, `approval:<key>`. */
  name: string;
  kind: string;
  tool: string | null;
  reason: string | null;
  /** `pending`, `approved`, `rejected`, `expired`, or `abandoned` (the run ended undecided). */
  status: string;
  decided_by: string | null;
  requested_at_ms: Int8;
  expires_at_ms: Int8 | null;
  /** The approval as agent-loop recorded it (JSON). */
  approval: string;
}

/** One row per model call of an agent run (its `decide:<turn>` record): what spend sums. */
export interface ProjectionModelCallsTable {
  run_id: string;
  sequence: number;
  agent: string | null;
  provider: string;
  model: string;
  /** UTC day of the call, `YYYY-MM-DD`. */
  day: string;
  at_ms: Int8;
  input_tokens: Int8 | null;
  output_tokens: Int8 | null;
  /** Null: the cost is unknown (no price for the model, or a count the provider did not report). */
  cost_usd: number | null;
}

/**
 * One row per schedule generation (an execution of `loom.cron.schedule`, `cron:<name>[#<n>]`):
 * what `loom schedules` lists while the generation is not settled.
 */
export interface ProjectionSchedulesTable {
  execution_id: string;
  /** The name given to `runtime.schedule(…)`. */
  name: string;
  expression: string;
  timezone: string;
  flow: string;
  version: string | null;
  /** The generation's status, as its run row's (`running`, `suspended`, `completed`, …). */
  status: string;
  /** The generation's durable timer while it sleeps: its next firing. */
  wake_at_ms: Int8 | null;
  last_fired_at_ms: Int8 | null;
  last_run_id: string | null;
}

/** Where the projector is in the global log, written in the same transaction as the rows. */
export interface ProjectionCheckpointsTable {
  name: string;
  /** The position of the last event folded (the store's `readAll` cursor); 0 before any. */
  position: Int8;
  /** Events folded so far (redeliveries not counted). */
  events: Int8;
  version: number;
  updated_at_ms: Int8;
}

/** Loom's projection tables as kysely sees them (the typed table definitions of the read side). */
export interface ProjectionDatabase {
  loom_projection_runs: ProjectionRunsTable;
  loom_projection_approvals: ProjectionApprovalsTable;
  loom_projection_model_calls: ProjectionModelCallsTable;
  loom_projection_schedules: ProjectionSchedulesTable;
  loom_projection_checkpoints: ProjectionCheckpointsTable;
}

/**
 * The projection schema's version; `initProjections` writes it, opening checks it. 2 added
 * `loom_projection_schedules`; `initProjections` over version 1 tables rebuilds them (drops and
 * re-creates: they are derived from the log, and the next projector run refills them).
 */
export const projectionSchemaVersion = 2;

/** The checkpoint row of the projector (one projector per database). */
export const checkpointName = 'main';

/** Every projection table, for the existence check and for tests. */
export const projectionTables = [
  'loom_projection_runs',
  'loom_projection_approvals',
  'loom_projection_model_calls',
  'loom_projection_schedules',
  'loom_projection_checkpoints',
] as const;

/**
 * The DDL, hand-written per dialect (ADR 0004: schema by hand, kysely for the queries). `big` is
 * the 64-bit integer type, `real` the double. On SQLite the runs table is `WITHOUT ROWID`, kept in
 * id order like the store's index: a page in id order is one range scan, not an index walk plus a
 * row lookup per run.
 */
export function projectionDdl(dialect: 'sqlite' | 'postgres', prefix: string): string[] {
  const big = dialect === 'sqlite' ? 'INTEGER' : 'BIGINT';
  const real = dialect === 'sqlite' ? 'REAL' : 'DOUBLE PRECISION';
  const t = (name: string) => `${prefix}${name}`;
  return [
    `CREATE TABLE ${t('loom_projection_runs')} (
      id TEXT PRIMARY KEY,
      kind TEXT NOT NULL,
      flow TEXT,
      agent TEXT,
      version TEXT,
      status TEXT NOT NULL,
      terminal_reason TEXT,
      steps INTEGER NOT NULL,
      open_steps TEXT NOT NULL,
      pending_approvals INTEGER NOT NULL,
      model_calls INTEGER NOT NULL,
      input_tokens ${big} NOT NULL,
      output_tokens ${big} NOT NULL,
      cost_usd ${real} NOT NULL,
      cost_unknown_calls INTEGER NOT NULL,
      created_at_ms ${big} NOT NULL,
      updated_at_ms ${big} NOT NULL,
      wake_at_ms ${big},
      last_sequence INTEGER NOT NULL
    )${dialect === 'sqlite' ? ' WITHOUT ROWID' : ''}`,
    `CREATE INDEX loom_projection_runs_status ON ${t('loom_projection_runs')} (status, id)`,
    `CREATE INDEX loom_projection_runs_flow ON ${t('loom_projection_runs')} (flow, id)`,
    `CREATE TABLE ${t('loom_projection_approvals')} (
      id TEXT PRIMARY KEY,
      run_id TEXT NOT NULL,
      name TEXT NOT NULL,
      kind TEXT NOT NULL,
      tool TEXT,
      reason TEXT,
      status TEXT NOT NULL,
      decided_by TEXT,
      requested_at_ms ${big} NOT NULL,
      expires_at_ms ${big},
      approval TEXT NOT NULL
    )`,
    `CREATE INDEX loom_projection_approvals_status ON ${t('loom_projection_approvals')} (status, requested_at_ms)`,
    `CREATE INDEX loom_projection_approvals_run ON ${t('loom_projection_approvals')} (run_id, status)`,
    `CREATE TABLE ${t('loom_projection_model_calls')} (
      run_id TEXT NOT NULL,
      sequence INTEGER NOT NULL,
      agent TEXT,
      provider TEXT NOT NULL,
      model TEXT NOT NULL,
      day TEXT NOT NULL,
      at_ms ${big} NOT NULL,
      input_tokens ${big},
      output_tokens ${big},
      cost_usd ${real},
      PRIMARY KEY (run_id, sequence)
    )`,
    `CREATE INDEX loom_projection_model_calls_day ON ${t('loom_projection_model_calls')} (day)`,
    `CREATE TABLE ${t('loom_projection_schedules')} (
      execution_id TEXT PRIMARY KEY,
      name TEXT NOT NULL,
      expression TEXT NOT NULL,
      timezone TEXT NOT NULL,
      flow TEXT NOT NULL,
      version TEXT,
      status TEXT NOT NULL,
      wake_at_ms ${big},
      last_fired_at_ms ${big},
      last_run_id TEXT
    )`,
    `CREATE INDEX loom_projection_schedules_name ON ${t('loom_projection_schedules')} (name)`,
    `CREATE TABLE ${t('loom_projection_checkpoints')} (
      name TEXT PRIMARY KEY,
      position ${big} NOT NULL,
      events ${big} NOT NULL,
      version INTEGER NOT NULL,
      updated_at_ms ${big} NOT NULL
    )`,
  ];
}
