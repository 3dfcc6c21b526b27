// Reads for a whole page of runs at once (ADR 0027, amendment P15): the logs of every listed run
// in one query, and the approval decisions of every waiting agent run in one more. The kernel's
// EventStore reads one execution at a time; on SQLite and Postgres these two read-only queries
// stand in for 1 + 2 × (waiting agent runs) + (listed runs) of its calls. The memory backend (and
// any other store) falls back to those per-run calls.

import type { EventStore, StoredEvent, StoredSignal } from '@loom/event-runtime';
import type Database from 'better-sqlite3';
import type pg from 'pg';
import type { WaitingItem } from '../waiting-item.js';
import { readInbox, readLog } from './read-log.js';
import {
  countsSql,
  type Dialect,
  type IndexRowLite,
  type IndexSqlRow,
  indexRowOf,
  matches,
  pageSql,
  postgresDialect,
  type RunQuery,
  sortValueOf,
  sqliteDialect,
} from './run-search-query.js';

/** Runs per status as the index groups them (`settledAs` set on settled runs). */
export interface StatusCount {
  status: string;
  settledAs: string | null;
  n: number;
}

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
  /**
   * Whether the log holds a committed event a reader at `position` (a `readAll` cursor, 0 for the
   * start) has not read, in one query. Unlike `readAll`, which on Postgres holds rows back while
   * any older transaction on the server is open, this sees every committed event: a projection is
   * current only when nothing is after its checkpoint, held back or not. A cursor whose row is gone
   * (pruned) counts as behind.
   */
  hasEventsAfter(position: number): Promise<boolean>;
  /**
   * A runs search's page from the execution index (one query): at most `limit + 1` rows from its
   * cursor, in the order read (see `pageSql`).
   */
  searchRows(query: RunQuery): Promise<IndexRowLite[]>;
  /** The runs its filters match (status and cursor aside), per status (one query). */
  countRows(query: RunQuery): Promise<StatusCount[]>;
  /**
   * The queue's oldest waiting item (pending, or claimed with its claim expired at `nowMs`), by
   * enqueue order, in one query; null when none waits; undefined when this store cannot tell.
   */
  oldestWaiting(queue: string, nowMs: number): Promise<WaitingItem | null | undefined>;
}

interface WaitingSqlRow {
  item_id: string;
  flow: string;
  version: string | null;
  enqueued_at_ms: number | string;
}

function waitingOf(row: WaitingSqlRow | undefined): WaitingItem | null {
  if (row === undefined) return null;
  return {
    itemId: row.item_id,
    flow: row.flow,
    version: row.version,
    enqueuedAtMs: Number(row.enqueued_at_ms),
  };
}

// The queue's unfinished items are read through its claim index (queue, priority, seq; status
// <> 'done'), then the first by seq (enqueue order) that is not under a live claim.
const oldestWaitingWhere = `status <> 'done' AND NOT (status = 'running' AND claim_expires_at_ms > `;

interface CountSqlRow {
  status: string;
  settled_as: string | null;
  n: number | string;
}

function countOf(row: CountSqlRow): StatusCount {
  return { status: row.status, settledAs: row.settled_as, n: Number(row.n) };
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
  const oldest = database.prepare<[string, number], WaitingSqlRow>(
    `SELECT item_id, flow, version, enqueued_at_ms FROM loom_queue_items
     WHERE queue = ? AND ${oldestWaitingWhere}?)
     ORDER BY seq LIMIT 1`,
  );
  const after = database.prepare<[number], { ahead: number }>(
    'SELECT EXISTS (SELECT 1 FROM loom_events WHERE position > ?) AS ahead',
  );
  const tables = database.prepare<[string], { n: number }>(
    `SELECT count(*) AS n FROM sqlite_master
     WHERE type = 'table' AND name IN (SELECT value FROM json_each(?))`,
  );
  // One prepared statement per search shape (a few dozen at most: which filters are given).
  const prepared = new Map<string, Database.Statement<unknown[], unknown>>();
  const all = <R>(sql: { text: string; values: unknown[] }): R[] => {
    let statement = prepared.get(sql.text);
    if (statement === undefined) {
      statement = database.prepare(sql.text);
      prepared.set(sql.text, statement);
    }
    return statement.all(...sql.values) as R[];
  };
  return {
    logs: async (ids) =>
      ids.length === 0 ? new Map() : group(logs.all(JSON.stringify(ids)), eventOf),
    signals: async (ids, prefix) =>
      ids.length === 0
        ? new Map()
        : group(signals.all(JSON.stringify(ids), prefix.length, prefix), signalOf),
    hasTables: async (names) => Number(tables.get(JSON.stringify(names))?.n) === names.length,
    // One writer at a time: positions are handed out in commit order, so `>` is the reading order.
    hasEventsAfter: async (position) => Number(after.get(position)?.ahead) === 1,
    searchRows: async (query) => all<IndexSqlRow>(pageSql(query, sqliteDialect)).map(indexRowOf),
    countRows: async (query) => all<CountSqlRow>(countsSql(query, sqliteDialect)).map(countOf),
    oldestWaiting: async (queue, nowMs) => waitingOf(oldest.get(queue, nowMs)),
  };
}

/** Postgres: the ids go in as one `text[]` parameter (`= ANY($1)`), served by each table's key. */
export function postgresPageReader(pool: pg.Pool, schema: string): PageReader {
  const s = `"${schema}"`;
  const dialect: Dialect = postgresDialect(s);
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
    // readAll's order is (tx_id, position), behind a cursor row; here without its "older than every
    // open transaction" line, so a committed row it still holds back counts. Serves:
    // events_position_key (the cursor), then events_tx_id_position_idx (the first row after it).
    hasEventsAfter: async (position) => {
      const result = await pool.query<{ ahead: boolean }>(
        position <= 0
          ? `SELECT EXISTS (SELECT 1 FROM ${s}.events) AS ahead`
          : `SELECT COALESCE((
               SELECT EXISTS (
                 SELECT 1 FROM ${s}.events e
                 WHERE (e.tx_id, e.position) > (cur.tx_id, $1::bigint))
               FROM ${s}.events cur WHERE cur.position = $1::bigint
             ), true) AS ahead`,
        position <= 0 ? [] : [position],
      );
      return result.rows[0]?.ahead === true;
    },
    searchRows: async (query) => {
      const { text, values } = pageSql(query, dialect);
      return (await pool.query<IndexSqlRow>(text, values)).rows.map(indexRowOf);
    },
    countRows: async (query) => {
      const { text, values } = countsSql(query, dialect);
      return (await pool.query<CountSqlRow>(text, values)).rows.map(countOf);
    },
    oldestWaiting: async (queue, nowMs) => {
      const result = await pool.query<WaitingSqlRow>(
        `SELECT item_id, flow, version, enqueued_at_ms FROM ${s}.queue_items
         WHERE queue = $1 AND ${oldestWaitingWhere}$2)
         ORDER BY seq LIMIT 1`,
        [queue, nowMs],
      );
      return waitingOf(result.rows[0]);
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
    // The memory store holds nothing back: its readAll is the whole committed log in order.
    hasEventsAfter: async (position) =>
      (await store.readAll({ afterPosition: position, limit: 1 })).length > 0,
    // The store's API pages by id only: every index row is read and filtered here (the memory
    // backend of tests and examples, not thousands of runs).
    searchRows: async (query) => {
      const rows = (await allRows(store)).filter((row) => matches(query, row, true));
      const ascending = (query.order === 'asc') !== (query.keyset?.direction === 'before');
      const sign = ascending ? 1 : -1;
      const compare = (a: IndexRowLite, b: IndexRowLite) =>
        sign * (sortValueOf(query, a) - sortValueOf(query, b)) ||
        sign * (a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0);
      rows.sort(compare);
      const keyset = query.keyset;
      const from =
        keyset === undefined
          ? rows
          : rows.filter((row) => {
              const { value, id } = keyset;
              const key = { ...row, updatedAtMs: value, createdAtMs: value, executionId: id };
              return compare(row, key) > 0;
            });
      return from.slice(0, query.limit + 1);
    },
    countRows: async (query) => {
      const counts = new Map<string, StatusCount>();
      for (const row of await allRows(store)) {
        if (!matches(query, row, false)) continue;
        const key = `${row.status}/${row.settledAs}`;
        const count = counts.get(key) ?? { status: row.status, settledAs: row.settledAs, n: 0 };
        count.n += 1;
        counts.set(key, count);
      }
      return [...counts.values()];
    },
    // The QueueStore API reads one item by id: it cannot list a queue's waiting items.
    oldestWaiting: async () => undefined,
  };
}

/** Every row of the execution index, through the store's API (a page of ids at a time). */
async function allRows(store: EventStore): Promise<IndexRowLite[]> {
  const rows: IndexRowLite[] = [];
  for (let after = ''; ; ) {
    const page = await store.findExecutions({ afterExecutionId: after });
    rows.push(...page);
    const last = page[page.length - 1];
    if (last === undefined) return rows;
    after = last.executionId;
  }
}
