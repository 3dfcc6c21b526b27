import type { StoredEvent } from '../../envelope.js';
import type { PreparedAppend } from '../../internal/prepare-append.js';
import { guardedWake } from './append-statement.js';
import { type PgStatement, statementName } from './pg-statement.js';

/**
 * One row `appendBatch` gets back: an inserted event (`sequence`, `position` set), or an
 * execution the statement refused (`sequence` null): `epoch` is its current fence epoch when
 * the append was fenced, `next` its next sequence when its first sequence was already taken.
 */
export interface BatchAppendedRow {
  execution_id: string;
  sequence: string | null;
  position: string | null;
  epoch: string | null;
  next: string | null;
}

/**
 * The appends of many executions in one statement, so in one transaction and one commit (ADR
 * 0030). Per execution (`batch`, one row each, from parallel arrays) it checks, before inserting
 * anything:
 *
 * - the fence, as the single append does: `FOR SHARE` on the fence row, so an `advance` waits
 *   for this statement, and a statement queued behind an `advance` re-reads the new epoch;
 * - that its first sequence is not taken yet (one probe of events_pkey).
 *
 * Only the events of executions that pass (`admitted`) are inserted, with their index upserts;
 * the others come back as refusal rows (their epoch, or their next sequence) and the caller
 * turns them into `FENCE_STALE`, `EXECUTION_ALREADY_STARTED` or `SEQUENCE_CONFLICT`. So one
 * execution's conflict fails only that execution. A conflict the probe cannot see (another
 * transaction inserting the same sequence, not yet committed when this statement took its
 * snapshot) is a unique violation that aborts the whole statement; the caller then appends the
 * batch one execution at a time. The caller has already checked that the sequence before the
 * first one exists (the hash chain needs its hash), so "not taken" means "the next one".
 *
 * `checked` is MATERIALIZED so the checks (and the row locks) run exactly once per execution.
 * The probe is a scalar subquery, not `EXISTS`: the planner may run an `EXISTS` as a hashed
 * subplan, which reads the whole events table once per statement. A generic plan made while the
 * table was small chose that (the statement then slowed with every event appended: 3 → 7 ms per
 * batch of 8 over 13K events); a scalar subquery has only the per-execution probe of events_pkey.
 */
export function appendBatchStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'append-batch'),
    text: `WITH batch AS (
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::bigint[],
    $6::bigint[], $7::text[], $8::text[], $9::text[], $10::bigint[], $18::bigint[], $19::text[],
    $20::integer[])
    AS b(execution_id, first_sequence, fence_epoch, status, wake_at_ms, updated_at_ms,
         settled_as, flow, version, created_at_ms, signals_after, started_by, waiting_for)
), checked AS MATERIALIZED (
  SELECT b.*,
    CASE WHEN b.fence_epoch IS NULL THEN NULL
      ELSE coalesce((SELECT f.epoch FROM ${quotedSchema}.fences f
                     WHERE f.execution_id = b.execution_id FOR SHARE), 0) END AS epoch,
    coalesce((SELECT true FROM ${quotedSchema}.events e
              WHERE e.execution_id = b.execution_id AND e.sequence = b.first_sequence
              LIMIT 1), false) AS taken
  FROM batch b
), admitted AS (
  SELECT c.* FROM checked c
  WHERE NOT c.taken AND (c.fence_epoch IS NULL OR c.epoch = c.fence_epoch)
), inserted AS (
  INSERT INTO ${quotedSchema}.events (execution_id, sequence, type, payload, at, prev_hash, hash)
  SELECT r.execution_id, r.sequence, r.type, r.payload, r.at, r.prev_hash, r.hash
  FROM unnest($11::text[], $12::bigint[], $13::text[], $14::text[], $15::bigint[], $16::text[],
    $17::text[]) WITH ORDINALITY AS r(execution_id, sequence, type, payload, at, prev_hash, hash, ord)
  WHERE r.execution_id IN (SELECT a.execution_id FROM admitted a)
  ORDER BY r.ord
  RETURNING execution_id, sequence, position
), indexed AS (
  INSERT INTO ${quotedSchema}.executions AS x
    (execution_id, status, wake_at_ms, updated_at_ms, settled_as, flow, version, created_at_ms,
     started_by, waiting_for)
  SELECT a.execution_id, a.status, a.wake_at_ms, a.updated_at_ms, a.settled_as, a.flow,
    a.version, a.created_at_ms, a.started_by, a.waiting_for
  FROM admitted a WHERE a.status IS NOT NULL
  ON CONFLICT (execution_id) DO UPDATE
    SET status = excluded.status, waiting_for = excluded.waiting_for, claimed_by = NULL,
        wake_at_ms = ${guardedWake(`(SELECT a.signals_after FROM admitted a WHERE a.execution_id = excluded.execution_id)`)},
        updated_at_ms = excluded.updated_at_ms, settled_as = excluded.settled_as
)
SELECT i.execution_id, i.sequence, i.position, NULL::bigint AS epoch, NULL::bigint AS next
FROM inserted i
UNION ALL
SELECT c.execution_id, NULL, NULL, c.epoch,
  CASE WHEN c.taken THEN (SELECT coalesce(max(e.sequence) + 1, 0) FROM ${quotedSchema}.events e
                          WHERE e.execution_id = c.execution_id) END
FROM checked c
WHERE c.taken OR (c.fence_epoch IS NOT NULL AND c.epoch <> c.fence_epoch)`,
  };
}

/**
 * The hashes of the events before several appends (cold tail cache), in one round trip.
 * Serves: events_pkey.
 */
export function hashesAtStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'hashes-at'),
    text: `SELECT e.execution_id, e.hash FROM ${quotedSchema}.events e
JOIN unnest($1::text[], $2::bigint[]) AS k(execution_id, sequence)
  ON e.execution_id = k.execution_id AND e.sequence = k.sequence`,
  };
}

/** One admitted-so-far append of a batch: prepared, and chained on its previous hash. */
export interface ChainedAppend {
  prepared: PreparedAppend;
  stored: StoredEvent[];
}

/** The statement's parameters: per execution $1–$10, then per event $11–$17, then per execution $18 (the suspension's signal guard), $19 (started-by) and $20 (its wait kinds' bits). */
export function appendBatchValues(appends: readonly ChainedAppend[]): unknown[] {
  const ids: string[] = [];
  const firsts: number[] = [];
  const fences: (number | null)[] = [];
  const statuses: (string | null)[] = [];
  const wakes: (number | null)[] = [];
  const updateds: (number | null)[] = [];
  const settleds: (string | null)[] = [];
  const flows: (string | null)[] = [];
  const versions: (string | null)[] = [];
  const createds: (number | null)[] = [];
  const signalsAfters: (number | null)[] = [];
  const startedBys: (string | null)[] = [];
  const waitingFors: (number | null)[] = [];
  const rowIds: string[] = [];
  const sequences: number[] = [];
  const types: string[] = [];
  const payloads: string[] = [];
  const ats: number[] = [];
  const prevHashes: (string | null)[] = [];
  const hashes: string[] = [];
  for (const { prepared, stored } of appends) {
    const index = prepared.status;
    ids.push(prepared.executionId);
    firsts.push(prepared.firstSequence);
    fences.push(prepared.fenceEpoch ?? null);
    statuses.push(index?.status ?? null);
    wakes.push(index?.wakeAtMs ?? null);
    updateds.push(index?.updatedAtMs ?? null);
    settleds.push(index?.settledAs ?? null);
    flows.push(index?.flow ?? null);
    versions.push(index?.version ?? null);
    createds.push(index?.createdAtMs ?? null);
    signalsAfters.push(prepared.wakeOnSignalsAfter ?? null);
    startedBys.push(index?.startedBy ?? null);
    waitingFors.push(index?.waitingFor ?? null);
    for (let at = 0; at < stored.length; at++) {
      const event = stored[at] as StoredEvent;
      rowIds.push(prepared.executionId);
      sequences.push(event.sequence);
      types.push(event.type);
      payloads.push(prepared.events[at]?.payloadText as string);
      ats.push(event.at);
      prevHashes.push(event.prevHash);
      hashes.push(event.hash);
    }
  }
  return [
    ids,
    firsts,
    fences,
    statuses,
    wakes,
    updateds,
    settleds,
    flows,
    versions,
    createds,
    rowIds,
    sequences,
    types,
    payloads,
    ats,
    prevHashes,
    hashes,
    signalsAfters,
    startedBys,
    waitingFors,
  ];
}
