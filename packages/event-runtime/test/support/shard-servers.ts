// Several real PostgreSQL servers for one test file: the shared test server (5432) plus
// `extra` throwaway clusters of the installed PostgreSQL (initdb + pg_ctl as the postgres user,
// see throwaway-cluster.ts), started once before the file's tests and stopped and removed after
// them, also when a test or the setup fails (and at process exit if afterAll never ran).
// Every schema handed out is dropped on every server.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { migrate } from '../../src/store/postgres/migrate.js';
import { startThrowawayCluster, type ThrowawayCluster } from './throwaway-cluster.js';
import { emptySchema, pgTestUrl } from './throwaway-schemas.js';

export interface ShardServer {
  /** A connection string (trust auth). */
  readonly url: string;
  /** A pool for setup and inspection behind the stores' backs. */
  readonly admin: pg.Pool;
}

export interface ShardServers {
  /** The servers, shard 0 (the shared test server) first; filled in beforeAll. */
  readonly servers: readonly ShardServer[];
  /** A fresh schema name, dropped on every server after the file. */
  freshSchema(): string;
  dropSchema(schema: string): Promise<void>;
  /**
   * A schema migrated on every server with no rows, dropped after the file: one released by
   * {@link ShardServers.releaseSchema}, or else a fresh one migrated on the servers at once
   * (migrating is ~250 ms of wall per server; emptying ~1 ms).
   */
  migratedSchema(): Promise<string>;
  /** Empties `schema` on every server and hands it out again; only once its stores are closed. */
  releaseSchema(schema: string): Promise<void>;
}

/** Call at the top of a test file: the shared server and `extra` clusters of its own. */
export function useShardServers(extra = 2): ShardServers {
  const clusters: ThrowawayCluster[] = [];
  const servers: ShardServer[] = [];
  const schemas: string[] = [];
  const free: string[] = [];
  const destroyAll = () => {
    for (const cluster of clusters) cluster.destroy();
  };
  process.once('exit', destroyAll);
  const handle: ShardServers = {
    servers,
    freshSchema: () => {
      const schema = `loom_shard_${randomBytes(5).toString('hex')}`;
      schemas.push(schema);
      return schema;
    },
    dropSchema: async (schema) => {
      await Promise.all(
        servers.map((server) => server.admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)),
      );
    },
    migratedSchema: async () => {
      const reused = free.pop();
      if (reused !== undefined) return reused;
      const schema = handle.freshSchema();
      await Promise.all(servers.map((server) => migrate({ pool: server.admin, schema })));
      return schema;
    },
    releaseSchema: async (schema) => {
      await Promise.all(servers.map((server) => emptySchema(server.admin, schema)));
      free.push(schema);
    },
  };
  beforeAll(async () => {
    try {
      for (let n = 0; n < extra; n++) clusters.push(await startThrowawayCluster());
    } catch (error) {
      destroyAll();
      throw error;
    }
    for (const url of [pgTestUrl, ...clusters.map((cluster) => cluster.url)]) {
      servers.push({ url, admin: new pg.Pool({ connectionString: url, max: 2 }) });
    }
  }, 120_000);
  afterAll(async () => {
    try {
      for (const schema of schemas) await handle.dropSchema(schema).catch(() => undefined);
      await Promise.all(servers.map((server) => server.admin.end()));
    } finally {
      destroyAll();
      process.removeListener('exit', destroyAll);
    }
  }, 120_000);
  return handle;
}
