import type { ExecutionStatus, ExecutionSummary, SettledAs } from '../../envelope.js';
import { claimedByField } from '../../internal/claimed-by-field.js';
import { findExecutionsWhere } from '../../internal/find-executions-query.js';
import type { FindExecutionsFilter } from '../../internal/read-options.js';
import { waitingForOf } from '../../internal/waiting-for-of.js';
import { type PgStatement, statementName } from './pg-statement.js';

/** A findExecutions row as pg returns it (bigint columns arrive as strings). */
export interface PgExecutionRow {
  execution_id: string;
  status: string;
  settled_as: string | null;
  flow: string | null;
  version: string | null;
  started_by: string | null;
  claimed_by: string | null;
  wake_at_ms: string | null;
  waiting_for: number | null;
  created_at_ms: string;
  updated_at_ms: string;
  at: string;
  sequence: string;
}

/** Converts a row to the summary callers see. */
export function summaryFromPg(row: PgExecutionRow): ExecutionSummary {
  return {
    executionId: row.execution_id,
    status: row.status as ExecutionStatus,
    settledAs: row.settled_as as SettledAs | null,
    flow: row.flow,
    version: row.version,
    startedBy: row.started_by,
    ...claimedByField(row.claimed_by),
    wakeAtMs: row.wake_at_ms === null ? null : Number(row.wake_at_ms),
    ...waitingForOf(row.status as ExecutionStatus, row.waiting_for),
    createdAtMs: Number(row.created_at_ms),
    updatedAtMs: Number(row.updated_at_ms),
    lastEventAt: Number(row.at),
    nextSequence: Number(row.sequence) + 1,
  };
}

/**
 * The findExecutions statement for a filter and its parameters: only the filters given appear
 * (named by shape, so each shape is prepared once per connection), ordered by id after the
 * cursor, then the limit. The tail comes from one backward probe of events_pkey per execution
 * found, never a scan of the log.
 *
 * Serves: executions_status_id_idx (a status), executions_status_wake_idx (due suspended ones,
 * the timer poller), executions_flow_id_idx (a flow, with or without status, version and time
 * bounds), executions_settled_as_id_idx (one way of ending without a flow), executions_pkey
 * (no filter).
 */
export function findExecutionsQuery(
  quotedSchema: string,
  schema: string,
  filter: FindExecutionsFilter,
): { statement: PgStatement; values: unknown[] } {
  const where = findExecutionsWhere(filter, (index, type) => `$${index}::${type}`);
  const values = [...where.values, filter.limit];
  return {
    statement: {
      name: statementName(schema, `find-${where.shape}`),
      text: `SELECT x.execution_id, x.status, x.settled_as, x.flow, x.version, x.started_by,
  x.claimed_by, x.wake_at_ms, x.waiting_for, x.created_at_ms, x.updated_at_ms, tail.at, tail.sequence
FROM ${quotedSchema}.executions x
CROSS JOIN LATERAL (
  SELECT e.at, e.sequence FROM ${quotedSchema}.events e
  WHERE e.execution_id = x.execution_id
  ORDER BY e.sequence DESC
  LIMIT 1
) tail
WHERE ${where.conditions.join(' AND ')}
ORDER BY x.execution_id
LIMIT $${values.length}::bigint`,
    },
    values,
  };
}
