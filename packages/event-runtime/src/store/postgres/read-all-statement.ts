import { type PgStatement, statementName } from './pg-statement.js';
import { eventColumns, type PgEventRow } from './read-statement.js';

/**
 * Why readAll does not simply return `position > $after ORDER BY position`: positions come from
 * an identity sequence that sessions draw from before they commit, so a transaction holding
 * position 10 may commit after one holding 11. A reader that had already moved its cursor past
 * 11 would never see 10. Instead readAll returns only rows whose writing transaction is older
 * than the snapshot's xmin (every such transaction has finished, so no row can appear below
 * that line any more) and orders them by (tx_id, position): an order that only ever grows at its
 * end. The cursor is an existing row; `afterPosition` P means "after the row at position P in
 * that order". Positions stay unique, but along readAll they are not necessarily increasing.
 */
const committedBelowXmin = 'e.tx_id < pg_snapshot_xmin(pg_current_snapshot())';

/** From the start of the log ($1 limit). Serves: events_tx_id_position_idx. */
export function readAllFromStartStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'read-all-start'),
    text: `SELECT ${eventColumns} FROM ${quotedSchema}.events e
WHERE ${committedBelowXmin}
ORDER BY e.tx_id, e.position
LIMIT $1::bigint`,
  };
}

/** A readAll row after a cursor: `cursor_found` is false when no row has position $1. */
export interface PgReadAllRow extends Omit<PgEventRow, 'execution_id'> {
  cursor_found: boolean;
  /** Null on the one row returned when the cursor exists but nothing follows it yet. */
  execution_id: string | null;
}

/**
 * After the row at position $1 ($2 limit), in one round trip. Always returns at least one row so
 * an unknown cursor (cursor_found = false) is told apart from "nothing new". Serves:
 * events_position_key (the cursor's tx_id), then events_tx_id_position_idx (the range).
 */
export function readAllAfterStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'read-all-after'),
    text: `SELECT cur.tx_id IS NOT NULL AS cursor_found, page.*
FROM (SELECT (SELECT tx_id FROM ${quotedSchema}.events WHERE position = $1::bigint) AS tx_id) cur
LEFT JOIN LATERAL (
  SELECT ${eventColumns} FROM ${quotedSchema}.events e
  WHERE (e.tx_id, e.position) > (cur.tx_id, $1::bigint) AND ${committedBelowXmin}
  ORDER BY e.tx_id, e.position
  LIMIT $2::bigint
) page ON true`,
  };
}
