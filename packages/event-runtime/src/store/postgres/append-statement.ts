import type { StoredEvent } from '../../envelope.js';
import type { PreparedAppend } from '../../internal/prepare-append.js';
import { type PgStatement, statementName } from './pg-statement.js';

/** A row `append` gets back: the sequence and the position Postgres assigned to it. */
export interface AppendedRow {
  sequence: string;
  position: string;
}

/** Which of the four append statements: with a fence check, with an execution index upsert. */
export interface AppendShape {
  fenced: boolean;
  indexed: boolean;
}

/**
 * The hot path, one round trip: a multi-row insert from parallel arrays (unnest keeps the
 * statement text, and so its plan, the same for 1 or 1000 events), the fence check in the same
 * statement when `fenced`, the execution index upsert when `indexed`. No `pg_notify`: a
 * transaction that notifies takes Postgres's cluster-wide notify lock while it commits, which
 * would serialise every append; the store announces appends after their commit instead, from
 * its `PostCommitNotifier` (ADR 0028).
 *
 * The fence subquery takes FOR SHARE on the fence row, so a concurrent `advance` (an UPDATE of
 * that row) waits for this append to commit, and an append that queued behind an `advance`
 * re-reads the new epoch and inserts nothing: once `advance` returns, no append with an older
 * epoch can still commit. No rows back means the fence refused it.
 *
 * The index upsert's HAVING keeps a refused append from touching the index.
 */
export function appendStatement(
  quotedSchema: string,
  schema: string,
  shape: AppendShape,
): PgStatement {
  let next = 8;
  const fenceCheck = shape.fenced
    ? `WHERE coalesce((SELECT f.epoch FROM ${quotedSchema}.fences f
                       WHERE f.execution_id = $1::text FOR SHARE), 0) = $${next++}::bigint`
    : '';
  // flow, version, started_by and created_at_ms come from the append that starts the
  // execution; a later status change keeps them (they are not in the DO UPDATE). It clears
  // claimed_by: a claim's mark lasts until the row's next status change (ADR 0063).
  const indexUpsert = shape.indexed
    ? `, indexed AS (
  INSERT INTO ${quotedSchema}.executions AS x
    (execution_id, status, wake_at_ms, updated_at_ms, settled_as, flow, version, created_at_ms,
     started_by, waiting_for)
  SELECT $1::text, $${next}::text, $${next + 1}::bigint, $${next + 2}::bigint, $${next + 3}::text,
    $${next + 4}::text, $${next + 5}::text, $${next + 6}::bigint, $${next + 8}::text,
    $${next + 9}::integer
  FROM inserted
  HAVING count(*) > 0
  ON CONFLICT (execution_id) DO UPDATE
    SET status = excluded.status, waiting_for = excluded.waiting_for, claimed_by = NULL,
        wake_at_ms = ${guardedWake(`$${next + 7}::bigint`)},
        updated_at_ms = excluded.updated_at_ms, settled_as = excluded.settled_as
)`
    : '';
  const variant = `append${shape.fenced ? '-fenced' : ''}${shape.indexed ? '-indexed' : ''}`;
  return {
    name: statementName(schema, variant),
    text: `WITH inserted AS (
  INSERT INTO ${quotedSchema}.events (execution_id, sequence, type, payload, at, prev_hash, hash)
  SELECT $1::text, $2::bigint + t.ord - 1, t.type, t.payload, t.at, t.prev_hash, t.hash
  FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[])
    WITH ORDINALITY AS t(type, payload, at, prev_hash, hash, ord)
  ${fenceCheck}
  ORDER BY t.ord
  RETURNING sequence, position
)${indexUpsert}
SELECT i.sequence, i.position FROM inserted i`,
  };
}

/**
 * The wake time the index upsert's `DO UPDATE` writes: the suspension's own, or its append's time
 * (due at once, if earlier) when the row's `last_signal_id` is newer than the suspension's guard
 * `after` (null: no guard). `x` is the row's latest committed version, so a signal that committed
 * after this statement's snapshot still counts (migration 7, ADR 0033).
 */
export function guardedWake(after: string): string {
  return `CASE WHEN ${after} IS NOT NULL AND x.last_signal_id > ${after}
          THEN least(coalesce(excluded.wake_at_ms, excluded.updated_at_ms), excluded.updated_at_ms)
          ELSE excluded.wake_at_ms END`;
}

/**
 * The statement's parameters: $1–$7, then the claimed epoch, then the index row (status, wake-at,
 * updated-at, settled-as, flow, version, created-at, the suspension's signal guard, started-by,
 * the suspension's wait kinds as bits).
 */
export function appendValues(prepared: PreparedAppend, stored: readonly StoredEvent[]): unknown[] {
  const count = prepared.events.length;
  const types: string[] = new Array(count);
  const payloads: string[] = new Array(count);
  const ats: number[] = new Array(count);
  const prevHashes: (string | null)[] = new Array(count);
  const hashes: string[] = new Array(count);
  for (let index = 0; index < count; index++) {
    const event = stored[index] as StoredEvent;
    types[index] = event.type;
    payloads[index] = prepared.events[index]?.payloadText as string;
    ats[index] = event.at;
    prevHashes[index] = event.prevHash;
    hashes[index] = event.hash;
  }
  const values: unknown[] = [
    prepared.executionId,
    prepared.firstSequence,
    types,
    payloads,
    ats,
    prevHashes,
    hashes,
  ];
  if (prepared.fenceEpoch !== undefined) values.push(prepared.fenceEpoch);
  const index = prepared.status;
  if (index !== undefined) {
    values.push(
      index.status,
      index.wakeAtMs,
      index.updatedAtMs,
      index.settledAs,
      index.flow,
      index.version,
      index.createdAtMs,
      prepared.wakeOnSignalsAfter ?? null,
      index.startedBy,
      index.waitingFor,
    );
  }
  return values;
}
