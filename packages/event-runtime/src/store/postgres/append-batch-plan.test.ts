import { describe, expect, it } from 'vitest';
import { useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import { appendBatchStatement } from './append-batch-statement.js';
import { migrate } from './migrate.js';
import { quoteIdent } from './schema-name.js';

const db = useThrowawaySchemas();

describe('PostgresEventStore: the batch append statement', () => {
  it('probes events_pkey once per execution under a generic plan, never scanning the whole log', async () => {
    const schema = db.freshSchema();
    const quoted = quoteIdent(schema);
    await migrate({ pool: db.admin, schema });
    // A log the planner knows to be small but not empty: the shape under which a hashed EXISTS
    // subplan (one sequential scan of events per statement) looked cheaper than the probes.
    await db.admin.query(
      `INSERT INTO ${quoted}.events (execution_id, sequence, type, payload, at, prev_hash, hash)
       SELECT 'e-' || (n / 100), n % 100, 'x', 'null', 0, NULL, md5(n::text)
       FROM generate_series(0, 1999) AS n`,
    );
    await db.admin.query(`ANALYZE ${quoted}.events`);
    const client = await db.admin.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE batch_plan AS ${appendBatchStatement(quoted, schema).text}`);
      const perExecution = [
        "'{a,b,c,d,e,f,g,h}'",
        "'{0,0,0,0,0,0,0,0}'",
        "'{NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL}'",
        ...Array.from({ length: 7 }, () => "'{NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL}'"),
      ];
      const perEvent = [
        "'{a,b,c,d,e,f,g,h}'",
        "'{0,0,0,0,0,0,0,0}'",
        "'{x,x,x,x,x,x,x,x}'",
        `'{${Array(8).fill('"null"').join(',')}}'`,
        "'{0,0,0,0,0,0,0,0}'",
        "'{NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL}'",
        "'{h,h,h,h,h,h,h,h}'",
      ];
      // Then per execution: the suspension's signal guard, the starting node, the wait kinds.
      const nulls = "'{NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL}'";
      const args = [...perExecution, ...perEvent, nulls, nulls, nulls];
      const plan = (
        await client.query(
          `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE batch_plan(${args.join(', ')})`,
        )
      ).rows
        .map((row) => row['QUERY PLAN'] as string)
        .join('\n');
      expect(plan).not.toMatch(/Seq Scan on events/);
      expect(plan).toMatch(/events_pkey on events/);
      // The statement did its work: eight executions admitted, eight events inserted.
      expect(plan).toMatch(/Insert on events \(actual rows=8 loops=1\)/);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});
