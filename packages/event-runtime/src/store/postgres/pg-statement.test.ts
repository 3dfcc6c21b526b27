import fc from 'fast-check';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import { migrate } from './migrate.js';
import { statementName } from './pg-statement.js';
import { PostgresQueueStore } from './postgres-queue-store.js';

const db = useThrowawaySchemas();

/** The longest statement name the stores use (queue-statements.ts). */
const longestWhat = 'queue-unfinished-of-partition';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('statementName', () => {
  it('keeps the schema in the name while it fits in 63 bytes', () => {
    expect(statementName('app', 'append')).toBe('loom:app:append');
    const fits = 'a'.repeat(63 - 'loom::'.length - longestWhat.length);
    expect(statementName(fits, longestWhat)).toBe(`loom:${fits}:${longestWhat}`);
  });

  it('puts a digest of a long schema in its place: at most 63 bytes, one name per schema and statement', () => {
    // The longest: two 40-character schemas that differ only in their last character.
    const [longA, longB] = [`${'s'.repeat(39)}a`, `${'s'.repeat(39)}b`];
    expect(Buffer.byteLength(statementName(longA, longestWhat))).toBeLessThanOrEqual(63);
    expect(statementName(longA, longestWhat)).not.toBe(statementName(longB, longestWhat));
    const schemaName = fc.stringMatching(/^[a-z_][a-z0-9_]{0,39}$/);
    const what = fc.stringMatching(/^[a-z][a-z-]{0,28}$/);
    fc.assert(
      fc.property(schemaName, schemaName, what, what, (schemaA, schemaB, whatA, whatB) => {
        const a = statementName(schemaA, whatA);
        expect(Buffer.byteLength(a)).toBeLessThanOrEqual(63);
        expect(a.endsWith(`:${whatA}`)).toBe(true);
        expect(statementName(schemaA, whatA)).toBe(a);
        if (schemaA !== schemaB || whatA !== whatB) {
          expect(statementName(schemaB, whatB)).not.toBe(a);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('a store on a 40-character schema prepares its longest statement without pg warning on stderr', async () => {
    // pg prints three console.error lines at every parse of a name over 63 bytes (seen in every
    // suite run, from schemas of 29 characters and more), and the server cuts the name short.
    const schema = `${db.freshSchema()}_${'x'.repeat(40)}`.slice(0, 40);
    await migrate({ pool: db.admin, schema });
    const errors = vi.spyOn(console, 'error');
    const pool = new pg.Pool({ connectionString: pgTestUrl, max: 1 });
    const store = await PostgresQueueStore.open({ pool, schema });
    try {
      await store.enqueue({ queue: 'q', itemId: 'one', flow: 'f', input: null, partitionKey: 'k' });
      const unfinished = await store.unfinishedOfPartition('q', 'k');
      expect(unfinished.map((item) => item.itemId)).toEqual(['one']);
      expect(errors).not.toHaveBeenCalled();
      const { rows } = await pool.query<{ name: string }>(
        'SELECT name FROM pg_prepared_statements',
      );
      const prepared = rows.map((row) => row.name);
      expect(prepared).toContain(statementName(schema, longestWhat));
      expect(prepared.every((name) => Buffer.byteLength(name) <= 63)).toBe(true);
    } finally {
      await store.close();
      await pool.end();
      await db.dropSchema(schema);
    }
  });
});
