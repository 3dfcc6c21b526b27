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

/**
 * Whether a committed row is held back behind a transaction still open: visible to the
 * statement's snapshot (so committed) but at or above its xmin, hence not in any page yet, and
 * its notification may already have come and gone. A reader that wants it must read again once
 * that transaction has ended (the store's wake-up source retries, see NotifyHub). Every such row
 * is after the cursor: the cursor row was below the xmin of an earlier snapshot, and xmin never
 * goes back. So the probe needs no cursor condition, and must not have one: `(tx_id, position) >
 * cursor` as the scan's start walks every row between the cursor and the xmin (18 ms over 500,000
 * rows, against 0.03 ms from the xmin). Serves: events_tx_id_position_idx (a range scan from the
 * xmin that stops at the first visible row; it steps over rows of transactions still in flight).
 */
function heldBack(quotedSchema: string): string {
  return `EXISTS (SELECT 1 FROM ${quotedSchema}.events h
    WHERE h.tx_id >= pg_snapshot_xmin(pg_current_snapshot()))`;
}

/** A readAll row: the page's columns, and whether rows after it are held back. */
export interface PgReadAllRow extends Omit<PgEventRow, 'execution_id'> {
  /** False (from the cursor lookup) when no row has the cursor's position. */
  cursor_found: boolean;
  /** True when committed rows after the cursor are held back (see {@link heldBack}). */
  held_back: boolean;
  /** Null on the one row returned when nothing is readable after the cursor yet. */
  execution_id: string | null;
}

/**
 * From the start of the log ($1 limit), in one round trip. Always returns at least one row, which
 * carries `held_back`. Serves: events_tx_id_position_idx.
 */
export function readAllFromStartStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'read-all-start'),
    text: `SELECT true AS cursor_found, held.held_back, page.*
FROM (SELECT ${heldBack(quotedSchema)} AS held_back) held
LEFT JOIN LATERAL (
  SELECT ${eventColumns} FROM ${quotedSchema}.events e
  WHERE ${committedBelowXmin}
  ORDER BY e.tx_id, e.position
  LIMIT $1::bigint
) page ON true`,
  };
}

/**
 * After the row at position $1 ($2 limit), in one round trip. Always returns at least one row so
 * an unknown cursor (cursor_found = false) is told apart from "nothing new", and `held_back` is
 * known. Serves: events_position_key (the cursor's tx_id), then events_tx_id_position_idx (the
 * range, and the held-back probe).
 */
export function readAllAfterStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'read-all-after'),
    text: `SELECT cur.tx_id IS NOT NULL AS cursor_found,
  ${heldBack(quotedSchema)} AS held_back,
  page.*
FROM (SELECT (SELECT tx_id FROM ${quotedSchema}.events WHERE position = $1::bigint) AS tx_id) cur
LEFT JOIN LATERAL (
  SELECT ${eventColumns} FROM ${quotedSchema}.events e
  WHERE (e.tx_id, e.position) > (cur.tx_id, $1::bigint) AND ${committedBelowXmin}
  ORDER BY e.tx_id, e.position
  LIMIT $2::bigint
) page ON true`,
  };
}
