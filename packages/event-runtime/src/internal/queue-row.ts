import type { QueueItem, QueueItemOutcome, QueueItemStatus } from '../queue-store.js';
import { decodePayload } from './json-codec.js';

/** A queue item row as SQLite and Postgres return it (Postgres bigints arrive as text). */
export interface QueueItemRow {
  queue: string;
  item_id: string;
  flow: string;
  version: string | null;
  input: string;
  priority: number;
  dedupe_key: string | null;
  partition_key: string | null;
  /** Null in rows written before the migration that added it (the limit did not exist). */
  partition_limit?: number | null;
  /** The item's throttle (all three or none); absent in rows from before the migration. */
  throttle_key?: string | null;
  throttle_count?: number | null;
  throttle_window_ms?: number | string | null;
  /** The item's dedupe window (both or none); absent in rows from before the migration. */
  idempotency_key?: string | null;
  idempotency_until_ms?: number | string | null;
  /** The item's debounce (key and due time, deadline optional); absent in rows from before. */
  debounce_key?: string | null;
  due_at_ms?: number | string | null;
  debounce_deadline_ms?: number | string | null;
  status: string;
  owner: string | null;
  claim_expires_at_ms: number | string | null;
  started_at_ms: number | string | null;
  attempts: number;
  enqueued_at_ms: number | string;
  completed_at_ms: number | string | null;
  outcome: string | null;
  seq: number | string;
}

const orNull = (value: number | string | null): number | null =>
  value === null ? null : Number(value);

/** Maps a stored row to a fresh {@link QueueItem} (every stored time was a safe integer). */
export function queueItemFromRow(row: QueueItemRow): QueueItem {
  return {
    queue: row.queue,
    itemId: row.item_id,
    flow: row.flow,
    version: row.version,
    input: decodePayload(row.input),
    priority: row.priority,
    dedupeKey: row.dedupe_key,
    partitionKey: row.partition_key,
    partitionConcurrencyMax: row.partition_limit ?? null,
    throttle:
      row.throttle_key == null
        ? null
        : {
            key: row.throttle_key,
            count: Number(row.throttle_count),
            windowMs: Number(row.throttle_window_ms),
          },
    idempotency:
      row.idempotency_key == null
        ? null
        : { key: row.idempotency_key, untilMs: Number(row.idempotency_until_ms) },
    debounce:
      row.debounce_key == null
        ? null
        : {
            key: row.debounce_key,
            dueAtMs: Number(row.due_at_ms),
            deadlineMs: row.debounce_deadline_ms == null ? null : Number(row.debounce_deadline_ms),
          },
    status: row.status as QueueItemStatus,
    owner: row.owner,
    claimExpiresAtMs: orNull(row.claim_expires_at_ms),
    startedAtMs: orNull(row.started_at_ms),
    attempts: row.attempts,
    enqueuedAtMs: Number(row.enqueued_at_ms),
    completedAtMs: orNull(row.completed_at_ms),
    outcome: row.outcome as QueueItemOutcome | null,
  };
}

/** Claim order: priority desc, then enqueue order (what every backend returns). */
export function byClaimOrder(rows: QueueItemRow[]): QueueItemRow[] {
  return rows.sort((a, b) => b.priority - a.priority || Number(a.seq) - Number(b.seq));
}
