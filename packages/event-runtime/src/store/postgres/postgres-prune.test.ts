import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import type { EventEnvelope } from '../../envelope.js';
import { ErrorCode, type LoomError } from '../../errors.js';
import { freshId } from '../../testing/event-store-conformance.js';
import { migrate } from './migrate.js';
import { PostgresEventStore } from './postgres-event-store.js';
import { quoteIdent } from './schema-name.js';

const db = useThrowawaySchemas();

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as LoomError).code ?? `untyped: ${String(error)}`;
  }
  return 'resolved';
}

function env(executionId: string, sequence: number): EventEnvelope {
  return { executionId, sequence, type: 'test.event', payload: { n: sequence }, at: 1_000 };
}

/** `promise`, or a failure naming `what` once `deadlineMs` of real time passed. */
function within<T>(promise: Promise<T>, what: string, deadlineMs = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), deadlineMs);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe('PostgresEventStore: prune', () => {
  let schema: string;
  let store: PostgresEventStore;

  beforeAll(async () => {
    schema = db.freshSchema();
    await migrate({ pool: db.admin, schema });
    store = await PostgresEventStore.open({ connectionString: pgTestUrl, schema });
  });

  afterAll(async () => {
    await store.close();
  });

  it('skips an index row another transaction holds, without waiting for it, and takes it on the next call; one round trip', async () => {
    const held = freshId('prune-held');
    const free = freshId('prune-free');
    for (const id of [held, free]) {
      await store.append([env(id, 0), env(id, 1)], { status: 'settled' });
    }
    await store.append([{ ...env(freshId('prune-tip'), 0), at: Date.now() }], {
      status: 'running',
    });
    const writer = await db.admin.connect();
    try {
      await writer.query('BEGIN');
      // Stands in for a writer holding the row (an append's index upsert, a signal's row lock).
      await writer.query(
        `SELECT 1 FROM ${quoteIdent(schema)}.executions WHERE execution_id = $1 FOR UPDATE`,
        [held],
      );
      const before = store.stats.roundTrips;
      const first = await within(
        store.prune({ endedBeforeMs: 2_000 }),
        'a prune while another transaction holds one of its rows',
      );
      expect(store.stats.roundTrips - before).toBe(1);
      expect(first.map((row) => row.executionId)).toEqual([free]);
      await writer.query('COMMIT');
    } finally {
      writer.release();
    }
    const second = await store.prune({ endedBeforeMs: 2_000 });
    expect(second.map((row) => row.executionId)).toEqual([held]);
    const left = await db.admin.query(
      `SELECT count(*)::int AS n FROM ${quoteIdent(schema)}.events WHERE execution_id = ANY ($1)`,
      [[held, free]],
    );
    expect(left.rows[0].n).toBe(0);
  });

  it('a read-only store refuses prune', async () => {
    const reader = await PostgresEventStore.open({
      connectionString: pgTestUrl,
      schema,
      readOnly: true,
    });
    try {
      expect(await codeOf(reader.prune({ endedBeforeMs: 2_000 }))).toBe(ErrorCode.STORE_READ_ONLY);
    } finally {
      await reader.close();
    }
  });
});
