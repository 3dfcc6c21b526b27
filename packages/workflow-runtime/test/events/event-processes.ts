// What the events process tests share (events-processes, event-waits-processes): a folder removed
// after the file with the worker processes it spawned, a worker of the file's own script started
// on a target with a log file and a mode, a bounded poll that names what it waited for, the log's
// lines, and a fresh database per backend (a SQLite file, or a Postgres schema dropped after).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend } from '@loom/event-runtime';
import { openPostgres } from '@loom/event-runtime/postgres';
import { openSqlite } from '@loom/event-runtime/sqlite';
import { killTestProcesses, spawnTestProcess } from '@loom/event-runtime/testing';
import { afterAll } from 'vitest';

const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

/** A fresh database: the target string a worker takes, a backend on it, and its removal. */
export interface EventDatabase {
  target: string;
  open: () => Promise<Backend>;
  drop: () => Promise<void>;
}

/** Polls `check` every 10 ms until it holds; fails naming `what` after `deadlineMs`. */
export async function until(
  what: string,
  check: () => Promise<boolean> | boolean,
  deadlineMs = 30_000,
) {
  for (const deadline = Date.now() + deadlineMs; !(await check()); ) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The non-empty lines of a worker's log file. */
export const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);

/** Call at the top of a test file: `name` prefixes its folder, files and schemas. */
export function eventProcesses<Mode extends string>(name: string, workerFile: string) {
  const directory = mkdtempSync(join(tmpdir(), `loom-${name}-`));
  afterAll(async () => {
    await killTestProcesses();
    rmSync(directory, { recursive: true, force: true });
  });
  let counter = 0;
  const startWorker = (target: string, logFile: string, mode: Mode) => {
    const spawned = spawnTestProcess(workerFile, {
      args: [target, logFile, mode],
      name: `${name} worker (${mode})`,
    });
    return {
      child: spawned.child,
      ready: spawned.line(/ready/),
      exited: spawned.exit,
      line: (pattern: RegExp) => spawned.line(pattern),
    };
  };
  const databases: Array<[string, () => Promise<EventDatabase>]> = [
    [
      'sqlite',
      async () => {
        const path = join(directory, `${name}-${++counter}.db`);
        await openSqlite({ path, migrate: true }).close();
        return {
          target: `sqlite:${path}`,
          open: async () => openSqlite({ path, busyTimeoutMs: 10_000 }),
          drop: async () => {},
        };
      },
    ],
    [
      'postgres',
      async () => {
        const schema = `loom_${name.replaceAll('-', '_')}_${process.pid}_${++counter}`;
        const admin = await openPostgres({ connectionString: pgUrl, schema, migrate: true });
        return {
          target: `postgres:${schema}`,
          open: () => openPostgres({ connectionString: pgUrl, schema }),
          drop: async () => {
            await admin.events.connectionPool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
            await admin.close();
          },
        };
      },
    ],
  ];
  return { directory, startWorker, databases };
}
