// Backends for the takeover tests: each call opens the same database again (a new SQLite
// connection, a new Postgres pool; the one memory backend for memory), as another process would.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import type { Backend } from '../../src/index.js';
import { openMemory } from '../../src/index.js';
import { openPostgres } from '../../src/postgres.js';
import { openSqlite } from '../../src/sqlite.js';
import { pgTestUrl, useThrowawaySchemas } from '../support/throwaway-schemas.js';

export interface TakeoverTarget {
  readonly name: 'memory' | 'sqlite' | 'postgres';
  /** A fresh database; `open()` of the returned opener opens it again, as another process. */
  fresh(): () => Promise<Backend>;
}

/** Memory, a SQLite file and a throwaway Postgres schema, cleaned up after the file. */
export function takeoverTargets(): TakeoverTarget[] {
  const directory = mkdtempSync(join(tmpdir(), 'loom-takeover-'));
  const schemas = useThrowawaySchemas();
  let counter = 0;
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  return [
    {
      name: 'memory',
      fresh: () => {
        const backend = openMemory();
        // One store for both runtimes; closing it once is the test's last step.
        return async () => backend;
      },
    },
    {
      name: 'sqlite',
      fresh: () => {
        const path = join(directory, `takeover-${++counter}.db`);
        return async () => openSqlite({ path, migrate: true });
      },
    },
    {
      name: 'postgres',
      fresh: () => {
        const schema = schemas.freshSchema();
        return () => openPostgres({ connectionString: pgTestUrl, schema, migrate: true });
      },
    },
  ];
}

/** Resolves with `work`, or fails naming `what` once `ms` of real time passed. */
export async function within<T>(work: Promise<T>, what: string, ms = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
