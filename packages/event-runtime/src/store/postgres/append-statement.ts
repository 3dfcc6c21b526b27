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
 * statement when `fenced`, the execution index upsert when `indexed`, and one pg_notify per
 * batch carrying `<tip sequence>:<executionId>`.
 *
 * The fence subquery takes FOR SHARE on the fence row, so a concurrent `advance` (an UPDATE of
 * that row) waits for this append to commit, and an append that queued behind an `advance`
 * re-reads the new epoch and inserts nothing: once `advance` returns, no append with an older
 * epoch can still commit. No rows back means the fence refused it.
 *
 * The `notified` CTE calls a volatile function, so Postgres materializes it and runs it exactly
 * once; cross-joining it to the inserted rows is what makes it run at all (an unreferenced
 * SELECT CTE is skipped). Its HAVING, like the index upsert's, keeps a refused append silent.
 */
export function appendStatement(
  quotedSchema: string,
  schema: string,
  shape: AppendShape,
): PgStatement {
  let next = 9;
  const fenceCheck = shape.fenced
    ? `WHERE coalesce((SELECT f.epoch FROM ${quotedSchema}.fences f
                       WHERE f.execution_id = $1::text FOR SHARE), 0) = $${next++}::bigint`
    : '';
  // flow, version and created_at_ms come from the append that starts the execution; a later
  // status change keeps them (they are not in the DO UPDATE).
  const indexUpsert = shape.indexed
    ? `, indexed AS (
  INSERT INTO ${quotedSchema}.executions AS x
    (execution_id, status, wake_at_ms, updated_at_ms, settled_as, flow, version, created_at_ms)
  SELECT $1::text, $${next}::text, $${next + 1}::bigint, $${next + 2}::bigint, $${next + 3}::text,
    $${next + 4}::text, $${next + 5}::text, $${next + 6}::bigint
  FROM inserted
  HAVING count(*) > 0
  ON CONFLICT (execution_id) DO UPDATE
    SET status = excluded.status, wake_at_ms = excluded.wake_at_ms,
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
), notified AS (
  SELECT pg_notify($8::text, max(sequence)::text || ':' || $1::text)
  FROM inserted
  HAVING count(*) > 0
)${indexUpsert}
SELECT i.sequence, i.position FROM inserted i CROSS JOIN notified`,
  };
}

/**
 * The statement's parameters: $1–$8, then the claimed epoch, then the index row (status, wake-at,
 * updated-at, settled-as, flow, version, created-at).
 */
export function appendValues(
  prepared: PreparedAppend,
  stored: readonly StoredEvent[],
  channel: string,
): unknown[] {
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
    channel,
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
    );
  }
  return values;
}
