import type { ExecutionStatus, ExecutionSummary, SettledAs } from '../../envelope.js';
import { claimedByField } from '../../internal/claimed-by-field.js';
import { waitingForOf } from '../../internal/waiting-for-of.js';

/** A findExecutions row as better-sqlite3 returns it. */
export interface SqliteExecutionRow {
  execution_id: string;
  status: string;
  settled_as: string | null;
  flow: string | null;
  version: string | null;
  started_by: string | null;
  claimed_by: string | null;
  wake_at_ms: number | null;
  waiting_for: number | null;
  created_at_ms: number;
  updated_at_ms: number;
  at: number;
  sequence: number;
}

/**
 * The findExecutions statement for one filter shape (its conditions come from
 * find-executions-query.ts, with `?` placeholders); the last parameter is the limit.
 */
export function findExecutionsSql(conditions: readonly string[]): string {
  // The tail row gives lastEventAt and nextSequence: one index probe per execution found.
  return (
    'SELECT x.execution_id, x.status, x.settled_as, x.flow, x.version, x.started_by, ' +
    'x.claimed_by, x.wake_at_ms, x.waiting_for, x.created_at_ms, x.updated_at_ms, e.at, e.sequence FROM loom_executions x ' +
    'JOIN loom_events e ON e.execution_id = x.execution_id AND e.sequence = ' +
    '(SELECT max(sequence) FROM loom_events WHERE execution_id = x.execution_id) ' +
    `WHERE ${conditions.join(' AND ')} ORDER BY x.execution_id LIMIT ?`
  );
}

/** A row as the summary callers see. */
export function summaryFromSqlite(row: SqliteExecutionRow): ExecutionSummary {
  return {
    executionId: row.execution_id,
    status: row.status as ExecutionStatus,
    settledAs: row.settled_as as SettledAs | null,
    flow: row.flow,
    version: row.version,
    startedBy: row.started_by,
    ...claimedByField(row.claimed_by),
    wakeAtMs: row.wake_at_ms,
    ...waitingForOf(row.status as ExecutionStatus, row.waiting_for),
    createdAtMs: row.created_at_ms,
    updatedAtMs: row.updated_at_ms,
    lastEventAt: row.at,
    nextSequence: row.sequence + 1,
  };
}
