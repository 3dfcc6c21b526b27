// Shared by the projection tests: a priced agent, the projection tables of each backend, and a
// normalized copy of every projection row (to compare a kept projection with a fresh rebuild).
import { createAgentRuntime, defineAgent } from '@loom/agent-loop';
import { type Backend, openMemory, type StoredEvent } from '@loom/event-runtime';
import { StubModel } from '@loom/reasoning';
import type { Runtime } from '@loom/workflow-runtime';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import {
  catchUpProjections,
  createProjectionTables,
  type ProjectionDb,
  sqliteProjectionDb,
} from '../src/index.js';
import { parseDbUrl } from '../src/internal/db-url.js';
import { openProjectionDb } from '../src/projection/projection-db.js';
import { dbTargets } from './db-targets.js';
import { eventually } from './fixture.js';

/** Prices of the stub model: what the spend projection sums. */
export const stubPrices = { 'stub-model': { inputUsdPerMTok: 3, outputUsdPerMTok: 15 } };

/** An agent that answers at once, at a known price: one model call per run. */
export const spender = defineAgent({
  name: 'spender',
  model: new StubModel({ script: () => ({ text: 'done' }), prices: stubPrices }),
  instructions: 'answer',
  tools: [],
});

/** Runs `spender` `times` times on `flows`; returns each run's usage as agent-loop sums it. */
export async function spend(flows: Runtime, times: number, prefix = 'spend') {
  const agents = createAgentRuntime({ flows, agents: [spender] });
  const results = [];
  for (let i = 0; i < times; i += 1) {
    const run = await agents.start(spender, `question ${i}`, { runId: `${prefix}-${i}` });
    results.push(await run.result());
  }
  return results;
}

/** A backend with writable projection tables, per kind. */
export interface ProjectionTarget {
  name: 'memory' | 'sqlite' | 'postgres';
  db: string | undefined;
  backend: Backend;
  /** The projection tables, created and open for writing. */
  projections: ProjectionDb;
  /** A fresh set of projection tables (in memory) rebuilt from the whole log. */
  rebuild(): Promise<ProjectionRows>;
  close(): Promise<void>;
}

export async function memoryProjectionDb(): Promise<ProjectionDb> {
  const projections = sqliteProjectionDb(new Database(':memory:'));
  await createProjectionTables(projections);
  return projections;
}

/** The memory, SQLite and Postgres targets of one test file (`prefix` names its schema). */
export function projectionTargets(prefix: string) {
  const { dir, targets, cleanup } = dbTargets(prefix);
  const open = async (name: ProjectionTarget['name']): Promise<ProjectionTarget> => {
    const target = targets.find((t) => t.name === name);
    const backend = target === undefined ? openMemory() : await target.open();
    let projections: ProjectionDb;
    if (target === undefined) {
      projections = await memoryProjectionDb();
    } else {
      projections = await openProjectionDb(parseDbUrl(target.db), false);
      await createProjectionTables(projections);
    }
    return {
      name,
      db: target?.db,
      backend,
      projections,
      rebuild: async () => {
        const fresh = await memoryProjectionDb();
        try {
          await catchUpProjections({ events: backend.events, projections: fresh, batchSize: 97 });
          return await projectionRows(fresh);
        } finally {
          await fresh.close();
        }
      },
      close: async () => {
        await projections.close();
        await backend.close();
      },
    };
  };
  return { dir, targets, cleanup, open };
}

/** Every projection row, numbers normalized and sorted, the checkpoint's clock left out. */
export interface ProjectionRows {
  runs: Record<string, unknown>[];
  approvals: Record<string, unknown>[];
  modelCalls: Record<string, unknown>[];
  schedules: Record<string, unknown>[];
  checkpoint: { position: number; events: number };
}

function normalized(rows: Record<string, unknown>[]): Record<string, unknown>[] {
  return rows.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([key, value]) => [
        key,
        typeof value === 'string' && /^-?\d+$/.test(value) && key !== 'id' ? Number(value) : value,
      ]),
    ),
  );
}

export async function projectionRows(projections: ProjectionDb): Promise<ProjectionRows> {
  const { db } = projections;
  const runs = await db.selectFrom('loom_projection_runs').selectAll().orderBy('id').execute();
  const approvals = await db
    .selectFrom('loom_projection_approvals')
    .selectAll()
    .orderBy('id')
    .execute();
  const modelCalls = await db
    .selectFrom('loom_projection_model_calls')
    .selectAll()
    .orderBy('run_id')
    .orderBy('sequence')
    .execute();
  const schedules = await db
    .selectFrom('loom_projection_schedules')
    .selectAll()
    .orderBy('execution_id')
    .execute();
  const checkpoint = await db
    .selectFrom('loom_projection_checkpoints')
    .select(['position', 'events'])
    .executeTakeFirstOrThrow();
  return {
    runs: normalized(runs),
    approvals: normalized(approvals),
    modelCalls: normalized(modelCalls),
    schedules: normalized(schedules),
    checkpoint: { position: Number(checkpoint.position), events: Number(checkpoint.events) },
  };
}

/** The names of the tables in the database (SQLite) or schema (Postgres): what opening must not change. */
export async function tableNames(projections: ProjectionDb): Promise<string[]> {
  const { rows } =
    projections.dialect === 'sqlite'
      ? await sql<{
          name: string;
        }>`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`.execute(
          projections.db,
        )
      : await sql<{
          name: string;
        }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ${projections.schema ?? ''} ORDER BY table_name`.execute(
          projections.db,
        );
  return rows.map((row) => row.name);
}

export /**
 * The whole log in the store's order, once `readAll` shows every event each run's own log has (a
 * Postgres `readAll` stops below the oldest transaction open in the cluster, others' included).
 */
async function wholeLog(backend: Backend): Promise<StoredEvent[]> {
  let total = 0;
  for (const row of await backend.events.findExecutions({ limit: 10_000 })) {
    total += (await backend.events.read(row.executionId, { limit: 10_000 })).length;
  }
  return eventually(async () => {
    const out: StoredEvent[] = [];
    for (;;) {
      const page = await backend.events.readAll({
        afterPosition: out.at(-1)?.position ?? 0,
        limit: 10_000,
      });
      if (page.length === 0) break;
      out.push(...page);
    }
    return out.length === total ? out : undefined;
  }, 'readAll to show every event');
}
