// What the flow-control process tests share (concurrency, throttle, singleton, debounce): the worker
// process (tenant-worker.ts, in the mode its test names), a bounded poll that names what it waited
// for, reads of the tables the flows record themselves in, and a fresh target per backend (a
// SQLite file, or a Postgres schema dropped after the test).
import { join } from 'node:path';
import type { PostgresBackend } from '@loom/event-runtime/postgres';
import type { SqliteBackend } from '@loom/event-runtime/sqlite';
import { spawnTestProcess } from '@loom/event-runtime/testing';
import { openTarget } from './tenant-flow.js';

const workerFile = join(import.meta.dirname, 'tenant-worker.ts');

/** Polls `check` every 20 ms until it holds; fails naming `what` after `deadlineMs`. */
export async function until(what: string, check: () => Promise<boolean>, deadlineMs = 30_000) {
  for (const deadline = Date.now() + deadlineMs; !(await check()); ) {
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Rows of one of the test's tables, by SQL without the schema (added for Postgres). */
export async function rows<T>(backend: SqliteBackend | PostgresBackend, sql: string): Promise<T[]> {
  if (backend.kind === 'sqlite') return backend.events.database.prepare(sql).all() as T[];
  const text = sql.replace(/FROM (flowctl_\w+)/, `FROM "${backend.schema}".$1`);
  return (await backend.events.connectionPool.query(text)).rows as T[];
}

/** A worker process on `target`, running the flows of `mode` (tenant-worker.ts's argument). */
export function startWorker(
  target: string,
  mode?: 'throttle' | 'singleton' | 'debounce' | 'cancel',
) {
  const child = spawnTestProcess(workerFile, {
    args: mode === undefined ? [target] : [target, mode],
    name: `${mode ?? 'tenant'} worker`,
  });
  return { child, ready: child.line(/ready/) };
}

export interface ProcessTarget {
  /** `sqlite:<file>` or `postgres:<schema>`, as tenant-worker.ts and `openTarget` take it. */
  target: string;
  /** Removes what the target made (the Postgres schema; a SQLite file goes with the folder). */
  drop(): Promise<void>;
}

let counter = 0;

/** Each backend's maker of a fresh target, named `<prefix>-<n>` (files in `directory`). */
export function processTargets(
  directory: string,
  prefix: string,
): Array<[string, () => ProcessTarget]> {
  return [
    [
      'sqlite',
      () => ({
        target: `sqlite:${join(directory, `${prefix}-${++counter}.db`)}`,
        drop: async () => {},
      }),
    ],
    [
      'postgres',
      () => {
        const schema = `loom_${prefix}_${process.pid}_${++counter}`;
        return {
          target: `postgres:${schema}`,
          drop: async () => {
            const admin = await openTarget(`postgres:${schema}`);
            if (admin.kind === 'postgres') {
              await admin.events.connectionPool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
            }
            await admin.close();
          },
        };
      },
    ],
  ];
}
