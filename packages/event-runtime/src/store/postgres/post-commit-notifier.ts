import { type PgStatement, statementName } from './pg-statement.js';

/**
 * Bytes of one NOTIFY payload the notifier fills at most. Postgres refuses payloads of 8,000
 * bytes and more; the rest is headroom for the JSON framing of the last id.
 */
export const notifyPayloadBytesMax = 7_000;

/**
 * The notifier's one statement: every (channel, payload) pair of a flush, in one autocommit
 * transaction, so one flush takes Postgres's notify commit lock once however many appends it
 * announces.
 */
export function notifyStatement(schema: string): PgStatement {
  return {
    name: statementName(schema, 'notify'),
    text: 'SELECT count(pg_notify(t.channel, t.payload)) AS sent FROM unnest($1::text[], $2::text[]) AS t(channel, payload)',
  };
}

/** Sends a flush: channels and payloads are parallel arrays. Rejects when the statement fails. */
export type SendNotifies = (channels: string[], payloads: string[]) => Promise<void>;

/**
 * Announces committed appends after their commit, from outside the appending transactions
 * (ADR 0028). Appends report here once durable; the notifier keeps at most one notify statement
 * in flight per store and folds everything reported meanwhile into the next one, grouped per
 * channel (bucket) into JSON arrays of execution ids. So the writers' commits never take the
 * notify lock, and under load one statement announces many appends.
 *
 * A notification is a hint, never the data: if a flush fails (or the process dies between a
 * commit and its flush) listeners catch up on their next poll (`pollIntervalMs`) or their next
 * notification for the same bucket. A failed flush is counted, never thrown.
 */
export class PostCommitNotifier {
  private pending = new Map<string, Set<string>>();
  private flushing: Promise<void> | undefined;
  private closed = false;
  /** Notify statements sent (for the store's stats). */
  statements = 0;
  /** Notify statements that failed (their appends are found by polling instead). */
  failures = 0;

  constructor(private readonly send: SendNotifies) {}

  /** An append of `executionId`, notifying `channel`, committed. */
  committed(channel: string, executionId: string): void {
    if (this.closed) return;
    let ids = this.pending.get(channel);
    if (ids === undefined) {
      ids = new Set();
      this.pending.set(channel, ids);
    }
    ids.add(executionId);
    this.flushing ??= this.drain();
  }

  /** Sends what is pending, then refuses new reports. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flushing;
  }

  private async drain(): Promise<void> {
    // Appends that resolve in the same turn of the event loop join this flush.
    await Promise.resolve();
    while (this.pending.size > 0) {
      const batch = this.pending;
      this.pending = new Map();
      const { channels, payloads } = encodeNotifies(batch);
      try {
        this.statements++;
        await this.send(channels, payloads);
      } catch {
        this.failures++;
      }
    }
    this.flushing = undefined;
  }
}

/**
 * One payload per channel (more when the ids overflow {@link notifyPayloadBytesMax}): a JSON
 * array of execution ids, so any id (quotes, colons, newlines) round-trips.
 */
export function encodeNotifies(batch: ReadonlyMap<string, ReadonlySet<string>>): {
  channels: string[];
  payloads: string[];
} {
  const channels: string[] = [];
  const payloads: string[] = [];
  for (const [channel, ids] of batch) {
    let chunk: string[] = [];
    let bytes = 2;
    for (const id of ids) {
      const encoded = JSON.stringify(id);
      const size = Buffer.byteLength(encoded) + 1;
      if (chunk.length > 0 && bytes + size > notifyPayloadBytesMax) {
        channels.push(channel);
        payloads.push(`[${chunk.join(',')}]`);
        chunk = [];
        bytes = 2;
      }
      chunk.push(encoded);
      bytes += size;
    }
    if (chunk.length > 0) {
      channels.push(channel);
      payloads.push(`[${chunk.join(',')}]`);
    }
  }
  return { channels, payloads };
}

/** The execution ids a payload names; an unreadable payload names none (the poll covers it). */
export function decodeNotify(payload: string): string[] {
  // A writer from before ADR 0028 sends `<tip sequence>:<executionId>`, one per append.
  const legacy = /^\d+:/.exec(payload);
  if (legacy !== null) return [payload.slice(legacy[0].length)];
  try {
    const ids: unknown = JSON.parse(payload);
    if (Array.isArray(ids)) return ids.filter((id): id is string => typeof id === 'string');
  } catch {
    // Not ours: nothing to wake.
  }
  return [];
}
