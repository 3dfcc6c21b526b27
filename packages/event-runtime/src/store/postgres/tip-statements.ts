import { type PgStatement, statementName } from './pg-statement.js';

/**
 * The poll mode's statements (ADR 0057), one per store and tick however many executions are
 * watched: for each id of `$1`, its tip. Plain SQL every Postgres-compatible engine runs
 * (`unnest` of a text array, a correlated `max`), no LISTEN, no NOTIFY.
 *
 * `events`: the newest sequence. Serves: events_pkey, one backward probe per id.
 */
export function eventTipsStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'poll-event-tips'),
    text: `SELECT w.id AS execution_id,
  (SELECT max(e.sequence) FROM ${quotedSchema}.events e WHERE e.execution_id = w.id) AS tip
FROM unnest($1::text[]) AS w(id)`,
  };
}

/**
 * `live_chunks`: the newest position of any stream of the execution. Serves: live_chunks_stream
 * (execution_id, stream, position), index only, the execution's chunks.
 */
export function liveTipsStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'poll-live-tips'),
    text: `SELECT w.id AS execution_id,
  (SELECT max(c.position) FROM ${quotedSchema}.live_chunks c WHERE c.execution_id = w.id) AS tip
FROM unnest($1::text[]) AS w(id)`,
  };
}

/** Runs a tip statement on `query`: id → tip, for the ids that have one. */
export async function readTips(
  query: (
    statement: PgStatement,
    values: unknown[],
  ) => Promise<{ execution_id: string; tip: string | null }[]>,
  statement: PgStatement,
  executionIds: string[],
): Promise<Map<string, string>> {
  const rows = await query(statement, [executionIds]);
  const tips = new Map<string, string>();
  for (const row of rows) if (row.tip !== null) tips.set(row.execution_id, String(row.tip));
  return tips;
}
