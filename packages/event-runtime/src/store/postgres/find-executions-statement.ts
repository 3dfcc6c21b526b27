import type { ExecutionStatus, ExecutionSummary } from '../../envelope.js';
import { type PgStatement, statementName } from './pg-statement.js';

/** A findExecutions row as pg returns it (bigint columns arrive as strings). */
export interface PgExecutionRow {
  execution_id: string;
  status: string;
  wake_at_ms: string | null;
  at: string;
  sequence: string;
}

/** Converts a row to the summary callers see. */
export function summaryFromPg(row: PgExecutionRow): ExecutionSummary {
  return {
    executionId: row.execution_id,
    status: row.status as ExecutionStatus,
    wakeAtMs: row.wake_at_ms === null ? null : Number(row.wake_at_ms),
    lastEventAt: Number(row.at),
    nextSequence: Number(row.sequence) + 1,
  };
}

/**
 * Executions of a status after an id, by id ($1 status, $2 after, then $3 due-at-or-before when
 * `due`, then the limit). The tail comes from one backward probe of events_pkey per execution
 * found, never a scan of the log. Serves: executions_status_id_idx, or executions_status_wake_idx
 * when `due`.
 */
export function findExecutionsStatement(
  quotedSchema: string,
  schema: string,
  due: boolean,
): PgStatement {
  return {
    name: statementName(schema, due ? 'find-due-executions' : 'find-executions'),
    text: `SELECT x.execution_id, x.status, x.wake_at_ms, tail.at, tail.sequence
FROM ${quotedSchema}.executions x
CROSS JOIN LATERAL (
  SELECT e.at, e.sequence FROM ${quotedSchema}.events e
  WHERE e.execution_id = x.execution_id
  ORDER BY e.sequence DESC
  LIMIT 1
) tail
WHERE x.status = $1::text AND x.execution_id > $2::text
  ${due ? 'AND x.wake_at_ms <= $3::bigint' : ''}
ORDER BY x.execution_id
LIMIT $${due ? 4 : 3}::bigint`,
  };
}
