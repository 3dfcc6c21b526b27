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
  /** Rows with status SUCCESS in `dbos.workflow_status` whose id belongs to the cell. */
  workflowsRecorded: number;
  /** Step checkpoints in `dbos.operation_outputs` written by the cell's workflows. */
  stepsRecorded: number;
}

/** DBOS Transact launched on its own database; `DBOS` is a singleton, so one per process. */
export interface DbosPeer {
  /** The database DBOS owns for this run (dropped and created at launch, dropped at close). */
  databaseUrl: string;
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
 * Drops and creates `database` on the server of `serverUrl` (through the database `serverUrl`
 * names), registers one workflow per step count (each step `DBOS.runStep` of a function that
 * returns null at once, as Loom's bench flow does), and launches DBOS with its default
 * configuration apart from the name and the system database URL. Workflows take the same
 * 256-byte input as Loom's cells. Throws what DBOS throws when it cannot launch.
 */
export async function launchDbosPeer(serverUrl: string, database: string): Promise<DbosPeer> {
  if (!/^[a-z_][a-z0-9_]*$/.test(database)) {
    throw new Error(`the DBOS database name must be a plain identifier, got '${database}'`);
  }
  const server = new pg.Pool({ connectionString: serverUrl, max: 1 });
  server.on('error', () => {});
  try {
    await server.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await server.query(`CREATE DATABASE ${database}`);
  } finally {
    await server.end();
  }
  const databaseUrl = withDatabase(serverUrl, database);
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
  DBOS.setConfig({ name: 'loom-bench-peers', systemDatabaseUrl: databaseUrl });
  await DBOS.launch();
  const admin = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  admin.on('error', () => {});
  const input = payload256();
  const version = await sdkVersion();
  return {
    databaseUrl,
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
        `SELECT count(*)::int AS n FROM dbos.workflow_status WHERE workflow_uuid LIKE $1 AND status = 'SUCCESS'`,
        pattern,
      );
      const stepsRecorded = await count(
        admin,
        'SELECT count(*)::int AS n FROM dbos.operation_outputs WHERE workflow_uuid LIKE $1',
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
      const again = new pg.Pool({ connectionString: serverUrl, max: 1 });
      again.on('error', () => {});
      try {
        await again.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      } finally {
        await again.end();
      }
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
