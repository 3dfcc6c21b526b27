// Reads for a whole page of runs at once (ADR 0027, amendment P15): the logs of every listed run
// in one query, and the approval decisions of every waiting agent run in one more. The kernel's
// EventStore reads one execution at a time; on SQLite and Postgres these two read-only queries
// stand in for 1 + 2 × (waiting agent runs) + (listed runs) of its calls. The memory backend (and
// any other store) falls back to those per-run calls.

import type { EventStore, StoredEvent, StoredSignal } from '@loom/event-runtime';
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { readInbox, readLog } from './read-log.js';

/** Many runs' logs and inboxes, read together. */
export interface PageReader {
  /** Every event of these runs, by run, in sequence order (runs without events are absent). */
  logs(executionIds: readonly string[]): Promise<Map<string, StoredEvent[]>>;
  /** The signals of these runs whose name starts with `prefix`, by run, in arrival order. */
  signals(executionIds: readonly string[], prefix: string): Promise<Map<string, StoredSignal[]>>;
  /**
   * Whether every one of these tables exists beside the store (in its Postgres schema). The view
   * asks it before it loads the projection's query builder (kysely): most databases have no
   * projection tables, and a read of one that has none needs nothing more.
   */
  hasTables(names: readonly string[]): Promise<boolean>;
}

interface EventRow {
  execution_id: string;
  sequence: number | string;
  type: string;
  payload: string;
  at: number | string;
  position: number | string;
  prev_hash: string | null;
  hash: string;
}

interface SignalRow {
  execution_id: string;
  signal_id: number | string;
  name: string;
  payload: string;
  idempotency_key: string | null;
  at: number | string;
}

const eventColumns = 'execution_id, sequence, type, payload, at, position, prev_hash, hash';
const signalColumns = 'execution_id, signal_id, name, payload, idempotency_key, at';

function eventOf(row: EventRow): StoredEvent {
  return {
    executionId: row.execution_id,
    sequence: Number(row.sequence),
    type: row.type,
    payload: JSON.parse(row.payload),
    at: Number(row.at),
    position: Number(row.position),
    prevHash: row.prev_hash,
    hash: row.hash,
  };
}

function signalOf(row: SignalRow): StoredSignal {
  return {
    executionId: row.execution_id,
    signalId: Number(row.signal_id),
    name: row.name,
    payload: JSON.parse(row.payload),
    idempotencyKey: row.idempotency_key,
    at: Number(row.at),
  };
}

function group<R extends { execution_id: string }, T>(
  rows: readonly R[],
  map: (row: R) => T,
): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const row of rows) {
    let list = out.get(row.execution_id);
    if (list === undefined) {
      list = [];
      out.set(row.execution_id, list);
    }
    list.push(map(row));
  }
  return out;
}

/** SQLite: the ids go in as one JSON array (`json_each`), so each read is one prepared statement. */
export function sqlitePageReader(database: Database.Database): PageReader {
  const logs = database.prepare<[string], EventRow>(
    `SELECT ${eventColumns} FROM loom_events
     WHERE execution_id IN (SELECT value FROM json_each(?))
     ORDER BY execution_id, sequence`,
  );
  const signals = database.prepare<[string, number, string], SignalRow>(
    `SELECT ${signalColumns} FROM loom_signals
     WHERE execution_id IN (SELECT value FROM json_each(?)) AND substr(name, 1, ?) = ?
     ORDER BY execution_id, signal_id`,
  );
  const tables = database.prepare<[string], { n: number }>(
    `SELECT count(*) AS n FROM sqlite_master
     WHERE type = 'table' AND name IN (SELECT value FROM json_each(?))`,
  );
  return {
    logs: async (ids) =>
      ids.length === 0 ? new Map() : group(logs.all(JSON.stringify(ids)), eventOf),
    signals: async (ids, prefix) =>
      ids.length === 0
        ? new Map()
        : group(signals.all(JSON.stringify(ids), prefix.length, prefix), signalOf),
    hasTables: async (names) => Number(tables.get(JSON.stringify(names))?.n) === names.length,
  };
}

/** Postgres: the ids go in as one `text[]` parameter (`= ANY($1)`), served by each table's key. */
export function postgresPageReader(pool: pg.Pool, schema: string): PageReader {
  const s = `"${schema}"`;
  return {
    logs: async (ids) => {
      if (ids.length === 0) return new Map();
      const result = await pool.query<EventRow>(
        `SELECT ${eventColumns} FROM ${s}.events WHERE execution_id = ANY($1::text[])
         ORDER BY execution_id, sequence`,
        [ids],
      );
      return group(result.rows, eventOf);
    },
    signals: async (ids, prefix) => {
      if (ids.length === 0) return new Map();
      const result = await pool.query<SignalRow>(
        `SELECT ${signalColumns} FROM ${s}.signals
         WHERE execution_id = ANY($1::text[]) AND left(name, length($2::text)) = $2::text
         ORDER BY execution_id, signal_id`,
        [ids, prefix],
      );
      return group(result.rows, signalOf);
    },
    hasTables: async (names) => {
      const result = await pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM information_schema.tables
         WHERE table_schema = $1 AND table_name = ANY($2::text[])`,
        [schema, names],
      );
      return Number(result.rows[0]?.n) === names.length;
    },
  };
}

/** Any other store (the memory backend): one read per run through the EventStore API. */
export function storePageReader(store: EventStore): PageReader {
  return {
    logs: async (ids) => {
      const out = new Map<string, StoredEvent[]>();
      for (const id of ids) {
        const log = await readLog(store, id);
        if (log.length > 0) out.set(id, log);
      }
      return out;
    },
    signals: async (ids, prefix) => {
      const out = new Map<string, StoredSignal[]>();
      for (const id of ids) {
        const inbox = (await readInbox(store, id)).filter((s) => s.name.startsWith(prefix));
        if (inbox.length > 0) out.set(id, inbox);
      }
      return out;
    },
    // The store's API has no tables: whoever has projection tables reads them with their own.
    hasTables: async () => false,
  };
}
