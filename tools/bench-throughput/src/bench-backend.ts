import { join } from 'node:path';
import {
  type EventStore,
  InMemoryEventStore,
  InMemoryLeaseStore,
  InMemorySnapshotStore,
  type LeaseStore,
  type SnapshotStore,
} from '@loom/event-runtime';
import {
  PostgresEventStore,
  PostgresLeaseStore,
  PostgresSnapshotStore,
} from '@loom/event-runtime/postgres';
import {
  SqliteEventStore,
  SqliteLeaseStore,
  SqliteSnapshotStore,
} from '@loom/event-runtime/sqlite';
import pg from 'pg';
import type { Backend } from './knobs.js';

/**
 * Connections per Postgres pool: pg's default (10). The store under test and the raw INSERT loop
 * each get a pool of this size, so a comparison never hinges on how many connections one had.
 */
export const pgPoolSize = 10;

/** The Postgres server a run uses, and the throwaway schema it created there. */
export interface PgTarget {
  url: string;
  schema: string;
  /** The run's own pool: creates and drops the schema, counts rows, hosts the raw loops. */
  admin: pg.Pool;
  version: string;
}

/** One backend opened for a suite: the log, and the lease and snapshot stores beside it. */
export interface BenchBackend {
  kind: Backend;
  events: EventStore;
  /** The lease store, or why there is none (the cell is then reported as skipped). */
  leases: LeaseStore | string;
  snapshots: SnapshotStore | string;
  /** Rows in the event log now (to assert what a cell actually wrote). */
  countEvents(): Promise<number>;
  /** Statements sent to Postgres so far (Postgres only: `store.stats.roundTrips`). */
  roundTrips(): number | null;
  close(): Promise<void>;
}

/**
 * Connects and creates the run's throwaway schema, or says why Postgres cannot be used. The
 * schema name carries the time and pid, so concurrent runs never meet.
 */
export async function reachPostgres(url: string): Promise<PgTarget | string> {
  const admin = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 5_000 });
  admin.on('error', () => {});
  try {
    const version = (
      await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")
    ).rows[0]?.v;
    const schema = `loom_bench_${Date.now().toString(36)}_${process.pid}`;
    await admin.query(`CREATE SCHEMA ${schema}`);
    return { url, schema, admin, version: `PostgreSQL ${version ?? 'unknown'}` };
  } catch (error) {
    await admin.end().catch(() => undefined);
    return `${(error as Error).message || String(error)}`;
  }
}

/** Drops the run's schema (everything the run wrote) and closes the admin pool. */
export async function dropPostgres(target: PgTarget): Promise<void> {
  try {
    await target.admin.query(`DROP SCHEMA IF EXISTS ${target.schema} CASCADE`);
  } finally {
    await target.admin.end();
  }
}

/** A fresh in-memory log with its lease and snapshot stores. */
export function openMemory(): BenchBackend {
  const events = new InMemoryEventStore();
  const leases = new InMemoryLeaseStore();
  const snapshots = new InMemorySnapshotStore();
  return {
    kind: 'memory',
    events,
    leases,
    snapshots,
    countEvents: async () => {
      let count = 0;
      for (;;) {
        // Memory positions are 1, 2, 3, … in append order, so the count is the last position.
        const page = await events.readAll({ afterPosition: count, limit: 10_000 });
        if (page.length === 0) return count;
        count = page[page.length - 1]?.position ?? count;
      }
    },
    roundTrips: () => null,
    close: async () => {
      await leases.close();
      await snapshots.close();
      await events.close();
    },
  };
}

/** A SQLite file in the run's temporary directory, WAL, at the given synchronous level. */
export function openSqlite(
  directory: string,
  name: string,
  synchronous: 'FULL' | 'NORMAL',
): BenchBackend {
  const events = SqliteEventStore.open({
    path: join(directory, `${name}.db`),
    migrate: true,
    synchronous,
  });
  const leases = new SqliteLeaseStore(events.database);
  const snapshots = new SqliteSnapshotStore(events.database);
  const count = events.database.prepare('SELECT count(*) AS n FROM loom_events');
  return {
    kind: 'sqlite',
    events,
    leases,
    snapshots,
    countEvents: async () => (count.get() as { n: number }).n,
    roundTrips: () => null,
    close: async () => {
      await leases.close();
      await snapshots.close();
      await events.close();
    },
  };
}

/**
 * The Postgres store on the run's schema (migrated), on its own pool of {@link pgPoolSize};
 * the lease and snapshot stores share that pool, as an application would.
 */
export async function openPostgres(target: PgTarget): Promise<BenchBackend> {
  const pool = new pg.Pool({ connectionString: target.url, max: pgPoolSize });
  pool.on('error', () => {});
  const events = await PostgresEventStore.open({ pool, schema: target.schema });
  await events.migrate();
  const shared = { pool, schema: target.schema };
  const leases = await optional('PostgresLeaseStore', () => PostgresLeaseStore.open(shared));
  const snapshots = await optional('PostgresSnapshotStore', () =>
    PostgresSnapshotStore.open(shared),
  );
  return {
    kind: 'postgres',
    events,
    leases,
    snapshots,
    countEvents: async () =>
      (
        await target.admin.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${target.schema}.events`,
        )
      ).rows[0]?.n ?? 0,
    roundTrips: () => events.stats.roundTrips,
    close: async () => {
      if (typeof leases !== 'string') await leases.close();
      if (typeof snapshots !== 'string') await snapshots.close();
      await events.close();
      await pool.end();
    },
  };
}

/**
 * A store beside the log that a suite can do without: opened, or the reason it could not be
 * (the cells that need it are then reported as skipped, never silently dropped).
 */
async function optional<T>(name: string, open: () => Promise<T>): Promise<T | string> {
  try {
    return await open();
  } catch (error) {
    return `skipped: ${name} could not be opened: ${(error as Error).message}`;
  }
}
