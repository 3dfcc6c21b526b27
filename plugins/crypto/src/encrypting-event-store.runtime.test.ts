// The kernel's runtime conformance suite, unchanged, with the runtime's event store wrapped in the
// decorator over SQLite and Postgres: every write path the runtime takes goes through it,
// `transact` (its exactly-once steps) included. The map marks fields the suite writes (a step's
// `result`, a flow's `input`), under one subject, so those are sealed inside the step's
// transaction; the last test checks that they were.
import type { EventStore } from '@loom/event-runtime';
import { runtimeConformance } from '@loom/event-runtime/testing';
import { postgresRuntimeHarness } from '@loom/event-runtime/testing/postgres';
import { sqliteRuntimeHarness } from '@loom/event-runtime/testing/sqlite';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { encryptingEventStore } from './encrypting-event-store.js';
import { isEncryptedField } from './field-cipher.js';
import { InMemoryKeyring } from './in-memory-keyring.js';
import type { SensitiveFields } from './sensitive-fields.js';
import { pgTestUrl, useBackends } from './store-harness.test-support.js';

const backends = useBackends();
const subject = () => 'runtime-conformance';
const sensitive: SensitiveFields = {
  'execution.started': { subject, fields: ['input'] },
  'step.completed': { subject, fields: ['result'] },
};
/**
 * The raw stores the suite's runtimes wrote to, to look at behind the decorator afterwards: the
 * stored `result` of every step.completed, and of those in executions with a transactional step.
 */
const opened: Array<{
  backend: string;
  rawStepResults(): Promise<{ all: unknown[]; withTransaction: unknown[] }>;
}> = [];
const inTransactional = (table: string, flag: string) =>
  `execution_id IN (SELECT execution_id FROM ${table} WHERE type = 'step.started' AND ${flag})`;

function wrap(store: EventStore): EventStore {
  return encryptingEventStore(store, { sensitive, keyring: new InMemoryKeyring() });
}

runtimeConformance('encrypting over sqlite', async () => {
  const path = backends.freshPath();
  const harness = await sqliteRuntimeHarness(path, { wrap, snapshotsPaired: false });
  opened.push({
    backend: 'sqlite',
    rawStepResults: async () => {
      const reader = new Database(path, { readonly: true });
      try {
        const query = (where: string) =>
          (
            reader
              .prepare(
                `SELECT payload ->> '$.result' IS NULL AS missing, payload -> '$.result' AS r FROM loom_events WHERE type = 'step.completed' AND ${where}`,
              )
              .all() as Array<{ missing: number; r: string }>
          ).map((row) => (row.missing ? null : JSON.parse(row.r)));
        return {
          all: query('1'),
          withTransaction: query(
            inTransactional('loom_events', "payload ->> '$.transactional' = 1"),
          ),
        };
      } finally {
        reader.close();
      }
    },
  });
  return harness;
});

runtimeConformance(
  'encrypting over postgres',
  async () => {
    const schema = backends.freshSchema();
    const harness = await postgresRuntimeHarness(
      { connectionString: pgTestUrl, schema },
      { wrap, snapshotsPaired: false },
    );
    const pool = backends.pool();
    opened.push({
      backend: 'postgres',
      rawStepResults: async () => {
        const query = async (where: string) =>
          (
            await pool.query<{ r: unknown }>(
              `SELECT payload::jsonb->'result' AS r FROM "${schema}".events WHERE type = 'step.completed' AND ${where}`,
            )
          ).rows.map((row) => row.r);
        return {
          all: await query('true'),
          withTransaction: await query(
            inTransactional(`"${schema}".events`, "payload::jsonb->>'transactional' = 'true'"),
          ),
        };
      },
    });
    return harness;
  },
  {
    // The whole suite runs over SQLite above; over Postgres, the sections whose records the
    // decorator seals and opens (transactional steps included: they are in 'recorded values').
    sections: [
      'steps and barriers',
      'replay and resume',
      'durable time, signals, values, versions, children, continue-as-new',
      'snapshots',
      'recorded values: limits, first run equals replay, closed contexts, hostile throws',
    ],
  },
);

describe('the encrypting runtime conformance runs above', () => {
  it('stored the step results they recorded, transactional ones included, as ciphertext', async () => {
    for (const backend of ['sqlite', 'postgres']) {
      const all: unknown[] = [];
      const withTransaction: unknown[] = [];
      for (const store of opened.filter((entry) => entry.backend === backend)) {
        const found = await store.rawStepResults();
        all.push(...found.all);
        withTransaction.push(...found.withTransaction);
      }
      expect(all.length, backend).toBeGreaterThan(20);
      expect(withTransaction.length, backend).toBeGreaterThan(0);
      // A null result (a step that returned nothing) holds no data and is left as it is.
      const plain = all.filter((result) => result !== null && !isEncryptedField(result));
      expect(plain, backend).toEqual([]);
      expect(withTransaction.filter(isEncryptedField).length, backend).toBeGreaterThan(0);
    }
  });
});
