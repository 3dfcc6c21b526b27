import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openOperator, openView } from '../src/index.js';

const pgUrl = process.env.LOOM_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const dir = mkdtempSync(join(tmpdir(), 'loom-view-open-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('opening a view never creates or migrates anything', () => {
  it('an empty SQLite file is SCHEMA_NOT_MIGRATED and stays empty', async () => {
    const path = join(dir, 'empty.db');
    writeFileSync(path, '');
    await expect(openView({ db: `sqlite:${path}` })).rejects.toMatchObject({
      code: 'SCHEMA_NOT_MIGRATED',
    });
    await expect(openOperator({ db: `sqlite:${path}` })).rejects.toMatchObject({
      code: 'SCHEMA_NOT_MIGRATED',
    });
    expect(statSync(path).size).toBe(0);
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it('a missing SQLite file is STORE_UNAVAILABLE and is not created', async () => {
    const path = join(dir, 'missing.db');
    await expect(openView({ db: `sqlite:${path}` })).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
    });
    await expect(openOperator({ db: `sqlite:${path}` })).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
    });
    expect(existsSync(path)).toBe(false);
  });

  it('a Postgres schema that does not exist is SCHEMA_NOT_MIGRATED and is not created', async () => {
    const schema = `view_open_${process.pid}`;
    const db = `${pgUrl}?schema=${schema}`;
    await expect(openView({ db })).rejects.toMatchObject({ code: 'SCHEMA_NOT_MIGRATED' });
    await expect(openOperator({ db })).rejects.toMatchObject({ code: 'SCHEMA_NOT_MIGRATED' });
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    try {
      const { rows } = await client.query(
        'SELECT 1 FROM information_schema.schemata WHERE schema_name = $1',
        [schema],
      );
      expect(rows).toEqual([]);
    } finally {
      await client.end();
    }
  });

  it('a bad --db is INVALID_DB_URL', async () => {
    await expect(openView({ db: 'mysql://x' })).rejects.toMatchObject({ code: 'INVALID_DB_URL' });
    await expect(openView({ db: 'sqlite:' })).rejects.toMatchObject({ code: 'INVALID_DB_URL' });
  });
});
