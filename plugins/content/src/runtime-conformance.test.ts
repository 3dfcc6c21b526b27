// The kernel's runtime conformance suite, unchanged, with the runtime's event store wrapped in this
// package's decorators over SQLite and Postgres (content in the same backend), a threshold low
// enough (64 bytes) that many recorded values move: every write path the runtime takes goes
// through them, `transact` (its exactly-once steps) included. The last test checks where the
// transactional steps' results ended up.
import type { EventStore } from '@loom/event-runtime';
import { runtimeConformance } from '@loom/event-runtime/testing';
import { postgresRuntimeHarness } from '@loom/event-runtime/testing/postgres';
import { sqliteRuntimeHarness } from '@loom/event-runtime/testing/sqlite';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { isContentRef } from './content-ref.js';
import { contentResolvingEventStore } from './content-resolving-event-store.js';
import type { ContentStore } from './content-store.js';
import { externalizingEventStore } from './externalizing-event-store.js';
import { PostgresContentStore } from './postgres-content-store.js';
import { SqliteContentStore } from './sqlite-content-store.js';
import { pgTestUrl, useThrowaway } from './throwaway.test-support.js';

const spare = useThrowaway();
const thresholdBytes = 64;

/**
 * Each run's log as stored: how many top-level payload fields are references, and the results of
 * its transactional steps.
 */
interface Results {
  references: number;
  transactional: unknown[];
}
const opened: Array<{ backend: string; results(): Promise<Results> }> = [];

function wrap(store: EventStore, content: ContentStore): EventStore {
  return contentResolvingEventStore(
    externalizingEventStore(store, content, { thresholdBytes }),
    content,
  );
}

/** Counts references; collects step.completed results that follow a transactional step.started. */
function split(rows: Array<{ payload: string; type: string; execution_id: string }>): Results {
  const transactionalSteps = new Set<string>();
  const results: Results = { references: 0, transactional: [] };
  for (const row of rows) {
    const payload = JSON.parse(row.payload) as Record<string, unknown> | null;
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) continue;
    results.references += Object.values(payload).filter(isContentRef).length;
    const key = `${row.execution_id}#${payload.index}`;
    if (row.type === 'step.started' && payload.transactional === true) transactionalSteps.add(key);
    if (row.type === 'step.completed' && transactionalSteps.has(key))
      results.transactional.push(payload.result);
  }
  return results;
}

const logRows = (table: string) =>
  `SELECT execution_id, type, payload FROM ${table} ORDER BY execution_id, sequence`;

runtimeConformance('content decorators over sqlite', async () => {
  const path = spare.freshPath('.db');
  const content = SqliteContentStore.open({ path: spare.freshPath('-content.db') });
  const harness = await sqliteRuntimeHarness(path, {
    wrap: (store) => wrap(store, content),
    snapshotsPaired: false,
  });
  opened.push({
    backend: 'sqlite',
    results: async () => {
      const reader = new Database(path, { readonly: true });
      try {
        return split(reader.prepare(logRows('loom_events')).all() as never);
      } finally {
        reader.close();
      }
    },
  });
  return {
    ...harness,
    close: async () => {
      await harness.close();
      await content.close();
    },
  };
});

runtimeConformance(
  'content decorators over postgres',
  async () => {
    const schema = spare.freshSchema();
    let content: PostgresContentStore | undefined;
    const harness = await postgresRuntimeHarness(
      { connectionString: pgTestUrl, schema },
      {
        wrap: async (store) => {
          content = await PostgresContentStore.open({ pool: store.connectionPool, schema });
          return wrap(store, content);
        },
        snapshotsPaired: false,
      },
    );
    opened.push({
      backend: 'postgres',
      results: async () =>
        split((await spare.admin.query(logRows(`"${schema}".events`))).rows as never),
    });
    return {
      ...harness,
      close: async () => {
        await harness.close();
        await content?.close();
      },
    };
  },
  {
    // The whole suite runs over SQLite above; over Postgres, the sections whose records move
    // through the decorators (transactional steps included: they are in 'recorded values').
    sections: [
      'steps and barriers',
      'replay and resume',
      'durable time, signals, values, versions, children, continue-as-new',
      'snapshots',
      'recorded values: limits, first run equals replay, closed contexts, hostile throws',
    ],
  },
);

describe('the content runtime conformance runs above', () => {
  const large = (result: unknown) =>
    result !== undefined && Buffer.byteLength(JSON.stringify(result)) >= thresholdBytes;

  it('moved fields out of the log, and ran transactional steps through the decorators', async () => {
    for (const backend of ['sqlite', 'postgres']) {
      let references = 0;
      const transactional: unknown[] = [];
      for (const run of opened.filter((entry) => entry.backend === backend)) {
        const found = await run.results();
        references += found.references;
        transactional.push(...found.transactional);
      }
      expect(references, `${backend}: references in the log`).toBeGreaterThan(0);
      expect(transactional.length, `${backend}: transactional results`).toBeGreaterThan(0);
      if (backend === 'postgres') {
        // The transaction awaits: whatever is large moves, inside it.
        expect(
          transactional.filter(large).filter((r) => !isContentRef(r)),
          backend,
        ).toEqual([]);
      } else {
        // better-sqlite3's transaction cannot await a put: transactional results stay inline.
        expect(transactional.filter(isContentRef), backend).toEqual([]);
      }
    }
  });
});
