import type { PreparedSignal } from '../../internal/prepare-signal.js';
import { signalTargetMissing, signalTargetSettled } from '../../internal/prepare-signal.js';
import { type PgStatement, statementName } from './pg-statement.js';

/**
 * Statements one `sendSignal` call may send before it gives up with `STORE_BUSY`. An attempt is
 * lost only when another signal to the same execution committed during it (see below), so with N
 * concurrent senders to one execution nobody needs more than N attempts; 64 bounds a storm on one
 * inbox instead of looping while it lasts.
 */
export const sendSignalAttemptsMax = 64;

/**
 * What one attempt did, in `outcome`: `missing` (no sequence 0 in the log), `settled`,
 * `duplicate` (the idempotency key is taken: `signal_id` is the first signal's), `sent`
 * (`signal_id` is the new signal's), or `raced` (another sender took the id or the key first:
 * nothing was written, send again).
 */
export interface PgSentSignalRow {
  outcome: 'missing' | 'settled' | 'duplicate' | 'sent' | 'raced';
  /** bigint, so a string; null unless `duplicate` or `sent`. */
  signal_id: string | null;
}

/**
 * `sendSignal` in one statement: `$1` execution id, `$2` name, `$3` payload text, `$4`
 * idempotency key (or null), `$5` at (the store's clock; also the new wake time).
 *
 * Why it may have to be sent again. Under READ COMMITTED a statement reads every table through
 * one snapshot taken when it starts, so `max(signal_id) + 1` (and the idempotency lookup) can be
 * stale by the time the row is inserted: a row lock or an advisory xact lock taken inside the
 * same statement would not help, because the snapshot predates the wait. The primary key and the
 * key index decide instead: an insert that meets another sender's row (waiting for it to commit
 * when it is still in flight) does nothing (`ON CONFLICT DO NOTHING`, so no 23505, no aborted
 * statement), the result says `raced`, and the next attempt's fresh snapshot sees the winner:
 * the next id, or the key as a duplicate. Bounded by {@link sendSignalAttemptsMax}.
 *
 * Why it locks the execution index row (`FOR NO KEY UPDATE`, first, before any insert). The lock
 * waits for an append that is changing the execution's status and then returns the row's latest
 * committed version, not the snapshot's: a signal is refused with `EXECUTION_SETTLED` when a
 * settle committed before it, and a suspend that committed before it is always woken (`woken`
 * updates by id, so Postgres re-applies it to the latest version). Senders to one execution
 * queue on the row; as they would collide on the id anyway this costs them nothing. Taking it
 * before the insert also keeps two senders from deadlocking (a shared lock upgraded after the
 * insert would). An execution appended without a status has no index row: nothing to lock,
 * settle or wake, and the id is still decided by the primary key.
 *
 * Every signal also records its id in the row's `last_signal_id` (migration 7), under that lock:
 * a suspension whose append reaches the row after this commits reads it there (its `DO UPDATE`
 * sees the row's latest version, not its snapshot's) and is due at once when its guard saw less
 * (`wakeOnSignalsAfter`, ADR 0033). Either the suspension committed first (this statement sees
 * `suspended` and wakes it) or this did (the suspension sees the id): never neither.
 *
 * Serves: events_pkey (started), executions_pkey (lock, wake), signals_idempotency_key_idx
 * (duplicate), signals_pkey (next id: one backward probe; the insert). No `pg_notify`: whoever
 * must act on a signal is woken through the execution index (`claimDue`).
 */
export function sendSignalStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'send-signal'),
    text: `WITH execution AS MATERIALIZED (
  SELECT x.status FROM ${quotedSchema}.executions x
  WHERE x.execution_id = $1::text
  FOR NO KEY UPDATE
), target AS MATERIALIZED (
  SELECT
    EXISTS (
      SELECT 1 FROM ${quotedSchema}.events e WHERE e.execution_id = $1::text AND e.sequence = 0
    ) AS started,
    (SELECT status FROM execution) AS status,
    (SELECT g.signal_id FROM ${quotedSchema}.signals g
     WHERE g.execution_id = $1::text AND g.idempotency_key = $4::text) AS existing_id,
    (SELECT coalesce(max(g.signal_id), 0) + 1 FROM ${quotedSchema}.signals g
     WHERE g.execution_id = $1::text) AS next_id
), inserted AS (
  INSERT INTO ${quotedSchema}.signals (execution_id, signal_id, name, payload, idempotency_key, at)
  SELECT $1::text, t.next_id, $2::text, $3::text, $4::text, $5::bigint
  FROM target t
  WHERE t.started AND t.status IS DISTINCT FROM 'settled' AND t.existing_id IS NULL
  ON CONFLICT DO NOTHING
  RETURNING signal_id
), woken AS (
  UPDATE ${quotedSchema}.executions x SET last_signal_id = i.signal_id,
    wake_at_ms = CASE WHEN t.status = 'suspended' THEN $5::bigint ELSE x.wake_at_ms END
  FROM target t, inserted i
  WHERE x.execution_id = $1::text
)
SELECT
  CASE
    WHEN NOT t.started THEN 'missing'
    WHEN t.existing_id IS NOT NULL THEN 'duplicate'
    WHEN t.status = 'settled' THEN 'settled'
    WHEN i.signal_id IS NOT NULL THEN 'sent'
    ELSE 'raced'
  END AS outcome,
  coalesce(i.signal_id, t.existing_id) AS signal_id
FROM target t LEFT JOIN inserted i ON true`,
  };
}

/** The statement's parameters, `$1`–`$5`. */
export function sendSignalValues(signal: PreparedSignal): unknown[] {
  return [signal.executionId, signal.name, signal.payloadText, signal.idempotencyKey, signal.at];
}

/**
 * What `sendSignal` returns for one attempt's row, or undefined when it `raced` (send again).
 * Throws `EXECUTION_NOT_FOUND` and `EXECUTION_SETTLED`, the same errors as every backend.
 */
export function signalSent(
  row: PgSentSignalRow | undefined,
  executionId: string,
): { signalId: number; duplicate: boolean } | undefined {
  switch (row?.outcome) {
    case 'missing':
      throw signalTargetMissing(executionId);
    case 'settled':
      throw signalTargetSettled(executionId);
    case 'duplicate':
    case 'sent':
      return { signalId: Number(row.signal_id), duplicate: row.outcome === 'duplicate' };
    case 'raced':
      return undefined;
    default:
      throw new Error(`invariant: send-signal returned ${JSON.stringify(row)}`);
  }
}
