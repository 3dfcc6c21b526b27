import { DBOS } from '@dbos-inc/dbos-sdk';
import pg from 'pg';
import { payload256 } from './bench-flows.js';
import { type ClosedLoopResult, closedLoop } from './closed-loop.js';

/** Step counts the peers comparison runs; each gets one registered DBOS workflow. */
export const peerStepCounts = [1, 3] as const;
export type PeerSteps = (typeof peerStepCounts)[number];

/** One DBOS cell: `executions` workflows of `steps` steps, `concurrency` in flight. */
export interface PeerCellSpec {
  /** Unique within the run: workflow ids carry it. */
  cellId: string;
  steps: PeerSteps;
  concurrency: number;
  executions: number;
}

/** What a DBOS cell measured, and what the system database recorded for it. */
export interface DbosCellResult extends ClosedLoopResult {
  /** Rows with status SUCCESS in DBOS's `workflow_status` whose id belongs to the cell. */
  workflowsRecorded: number;
  /** Step checkpoints in DBOS's `operation_outputs` written by the cell's workflows. */
  stepsRecorded: number;
}

/**
 * Where DBOS keeps its system tables: a database of its own (the bench: DBOS's default layout),
 * or a schema in the database `serverUrl` names (the test). A test must not create and drop
 * databases on a shared server: DROP DATABASE holds a transaction id while it waits for a
 * checkpoint (seconds), and every Loom `readAll` on that server waits for the oldest open
 * transaction id (a conformance run beside it saw nothing for 5 s and failed).
 */
export type DbosHome = { database: string } | { schema: string };

/** DBOS Transact launched on its own database or schema; `DBOS` is a singleton, so one per process. */
export interface DbosPeer {
  /** The database DBOS uses for this run. */
  databaseUrl: string;
  /** DBOS's system schema there (`dbos` in a database of its own). */
  schema: string;
  /** The version of `@dbos-inc/dbos-sdk` running. */
  version: string;
  runCell(spec: PeerCellSpec, onProgress?: (done: number) => void): Promise<DbosCellResult>;
  close(): Promise<void>;
}

/** `url` with its database name replaced. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/**
 * Drops and creates DBOS's home on the server of `serverUrl` (a database, through the database
 * `serverUrl` names; or a schema in that database), registers one workflow per step count (each step `DBOS.runStep` of a function that
 * returns null at once, as Loom's bench flow does), and launches DBOS with its default
 * configuration apart from the name and the system database URL. Workflows take the same
 * 256-byte input as Loom's cells. Throws what DBOS throws when it cannot launch.
 */
export async function launchDbosPeer(serverUrl: string, home: DbosHome): Promise<DbosPeer> {
  const name = 'database' in home ? home.database : home.schema;
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) {
    throw new Error(`the DBOS database or schema name must be a plain identifier, got '${name}'`);
  }
  const drop =
    'database' in home
      ? `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`
      : `DROP SCHEMA IF EXISTS ${name} CASCADE`;
  const onServer = async (statements: string[]) => {
    const server = new pg.Pool({ connectionString: serverUrl, max: 1 });
    server.on('error', () => {});
    try {
      for (const statement of statements) await server.query(statement);
    } finally {
      await server.end();
    }
  };
  if ('database' in home) await onServer([drop, `CREATE DATABASE ${name}`]);
  else await onServer([drop]);
  const databaseUrl = 'database' in home ? withDatabase(serverUrl, name) : serverUrl;
  const schema = 'database' in home ? 'dbos' : name;
  const workflows = new Map<PeerSteps, (input: unknown) => Promise<null>>();
  for (const steps of peerStepCounts) {
    const names = Array.from({ length: steps }, (_, index) => `step-${index}`);
    workflows.set(
      steps,
      DBOS.registerWorkflow(
        async (_input: unknown) => {
          for (const name of names) await DBOS.runStep(async () => null, { name });
          return null;
        },
        { name: `peers-${steps}-step` },
      ),
    );
  }
  DBOS.setConfig({
    name: 'loom-bench-peers',
    systemDatabaseUrl: databaseUrl,
    ...('schema' in home ? { systemDatabaseSchemaName: schema } : {}),
  });
  await DBOS.launch();
  const admin = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  admin.on('error', () => {});
  const input = payload256();
  const version = await sdkVersion();
  return {
    databaseUrl,
    schema,
    version,
    async runCell(spec, onProgress) {
      const workflow = workflows.get(spec.steps);
      if (workflow === undefined) throw new Error(`no DBOS workflow of ${spec.steps} steps`);
      const loop = await closedLoop(
        { concurrency: spec.concurrency, operations: spec.executions, postgres: true },
        async (index) => {
          const handle = await DBOS.startWorkflow(workflow, {
            workflowID: `${spec.cellId}-${index}`,
          })(input);
          await handle.getResult();
        },
        onProgress,
      );
      const pattern = `${spec.cellId}-%`;
      const workflowsRecorded = await count(
        admin,
        `SELECT count(*)::int AS n FROM ${schema}.workflow_status WHERE workflow_uuid LIKE $1 AND status = 'SUCCESS'`,
        pattern,
      );
      const stepsRecorded = await count(
        admin,
        `SELECT count(*)::int AS n FROM ${schema}.operation_outputs WHERE workflow_uuid LIKE $1`,
        pattern,
      );
      if (workflowsRecorded !== spec.executions || stepsRecorded !== spec.executions * spec.steps) {
        throw new Error(
          `DBOS cell ${spec.cellId}: ${spec.executions} workflows of ${spec.steps} steps ran, but ` +
            `the system database recorded ${workflowsRecorded} successful workflows and ` +
            `${stepsRecorded} step outputs`,
        );
      }
      return { ...loop, workflowsRecorded, stepsRecorded };
    },
    async close() {
      await admin.end();
      await DBOS.shutdown();
      await onServer([drop]);
    },
  };
}

async function count(pool: pg.Pool, sql: string, pattern: string): Promise<number> {
  return (await pool.query<{ n: number }>(sql, [pattern])).rows[0]?.n ?? 0;
}

async function sdkVersion(): Promise<string> {
  // The package's exports map hides package.json: read it beside the resolved entry point.
  const { createRequire } = await import('node:module');
  const { readFile } = await import('node:fs/promises');
  const entry = createRequire(import.meta.url).resolve('@dbos-inc/dbos-sdk');
  const root = entry.slice(0, entry.lastIndexOf('/dist/'));
  try {
    return (JSON.parse(await readFile(`${root}/package.json`, 'utf8')) as { version: string })
      .version;
  } catch {
    return 'unknown';
  }
}
