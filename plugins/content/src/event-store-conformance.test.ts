// The kernel's EventStore conformance suite, unchanged, on the decorators of this package over
// memory, SQLite and Postgres: externalizing then resolving, with a threshold low enough (16
// bytes) that the suite's larger fields (the 200-deep nesting, property-test strings, the
// lone-surrogate payload, …) go through the content store. The one field it keeps in the log
// below 16 bytes is the hash-formula test's `[1,"two",null]` (14 bytes): that test computes the
// hash over the payload as given, and the chain covers the stored form (ADR 0037).
import { CoalescingEventStore, type EventStore, InMemoryEventStore } from '@loom/event-runtime';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import {
  type EventStoreSection,
  eventStoreConformance,
  forwardingConformance,
  sameProcessPeer,
  storedRows,
} from '@loom/event-runtime/testing';
import { sqliteEventStoreHarness } from '@loom/event-runtime/testing/sqlite';
import { describe, expect, it } from 'vitest';
import { cachingContentStore } from './caching-content-store.js';
import { contentResolvingEventStore } from './content-resolving-event-store.js';
import type { ContentStore } from './content-store.js';
import { externalizingEventStore } from './externalizing-event-store.js';
import { InMemoryContentStore } from './in-memory-content-store.js';
import { SlowContentStore } from './testing/slow-content-store.js';
import { pgTestUrl, useThrowaway } from './throwaway.test-support.js';

const spare = useThrowaway();
const thresholdBytes = 16;
const puts: Record<string, number> = { memory: 0, sqlite: 0, postgres: 0 };

/**
 * The wiring under test, and a content store that tallies its puts per backend. `coalesced`:
 * with a CoalescingEventStore outside, so every append reaches the decorators as `appendBatch`.
 */
function wire(
  _backend: string,
  inner: EventStore,
  content: ContentStore,
  coalesced = false,
): EventStore {
  const store = contentResolvingEventStore(
    externalizingEventStore(inner, content, { thresholdBytes }),
    content,
  );
  return coalesced ? new CoalescingEventStore(store) : store;
}

function tallied(backend: string, inner: ContentStore): ContentStore {
  const counted = new SlowContentStore(inner);
  const put = counted.put.bind(counted);
  counted.put = async (bytes) => {
    puts[backend] = (puts[backend] ?? 0) + 1;
    return put(bytes);
  };
  return counted;
}

eventStoreConformance('content decorators over memory', async () => {
  const inner = new InMemoryEventStore();
  const content = tallied('memory', new InMemoryContentStore());
  const store = wire('memory', inner, content);
  return {
    store,
    openPeer: async () => wire('memory', sameProcessPeer(inner), content),
    countRows: async (executionId) => storedRows(inner, executionId).length,
    tamper: async (executionId, sequence, payloadText) => {
      const row = storedRows(inner, executionId)[sequence];
      if (row !== undefined) row.payloadText = payloadText;
    },
    close: () => store.close(),
  };
});

// The decorators change only the calls that carry payloads (the externalizing one: append,
// appendBatch, transact; the resolving one: those and read, readAll, subscribe): every other call is
// proven forwarded, and past the whole suite over memory and SQLite, the runs over Postgres and
// under a CoalescingEventStore (every append an appendBatch) take the sections that move payloads.
forwardingConformance('externalizingEventStore', {
  wrap: (inner) => externalizingEventStore(inner, new InMemoryContentStore(), { thresholdBytes }),
  changes: ['append', 'appendBatch', 'transact'],
});
forwardingConformance('contentResolvingEventStore', {
  wrap: (inner) => contentResolvingEventStore(inner, new InMemoryContentStore()),
  changes: ['append', 'appendBatch', 'transact', 'read', 'readAll', 'subscribe'],
});
const payloadSections: EventStoreSection[] = [
  'append and read',
  'readAll',
  'subscribe',
  'hash chain',
  'round-trip fidelity',
  'bad input',
  'ill-formed text in ids, types and names',
];
const batchSections: EventStoreSection[] = ['append and read', 'round-trip fidelity', 'bad input'];

for (const coalesced of [false, true]) {
  const over = coalesced ? 'coalescing over content decorators' : 'content decorators';
  eventStoreConformance(
    `${over} over sqlite (content cached, no getMany)`,
    async () => {
      const path = spare.freshPath('.db');
      const content = tallied(
        'sqlite',
        cachingContentStore(
          new SlowContentStore(new InMemoryContentStore(), { withGetMany: false }),
          {
            bytesMax: 1024 * 1024,
          },
        ),
      );
      return sqliteEventStoreHarness(path, {
        wrap: (inner) => wire('sqlite', inner, content, coalesced),
      });
    },
    coalesced ? { sections: batchSections } : {},
  );

  eventStoreConformance(
    `${over} over postgres`,
    async () => {
      const schema = spare.freshSchema();
      const content = tallied('postgres', new InMemoryContentStore());
      const open = async () => {
        const inner = await PostgresEventStore.open({
          connectionString: pgTestUrl,
          schema,
          pollIntervalMs: 200,
        });
        return inner;
      };
      const first = await open();
      await first.migrate();
      const store = wire('postgres', first, content, coalesced);
      const peers: EventStore[] = [];
      return {
        store,
        openPeer: async () => {
          const peer = wire('postgres', await open(), content, coalesced);
          peers.push(peer);
          return peer;
        },
        countRows: async (executionId) =>
          (
            await spare.admin.query(
              `SELECT count(*)::int AS n FROM "${schema}".events WHERE execution_id = $1`,
              [executionId],
            )
          ).rows[0].n as number,
        tamper: async (executionId, sequence, payloadText) => {
          await spare.admin.query(
            `UPDATE "${schema}".events SET payload = $3 WHERE execution_id = $1 AND sequence = $2`,
            [executionId, sequence, payloadText],
          );
        },
        close: async () => {
          await Promise.all([store.close(), ...peers.map((peer) => peer.close())]);
          await spare.dropSchema(schema);
        },
      };
    },
    { sections: coalesced ? batchSections : payloadSections },
  );
}

describe('the conformance runs above', () => {
  it('moved fields to the content store on every backend (the decorators were not idle)', () => {
    // At least the 200-deep nesting and two fields of the lone-surrogate payload, every run;
    // the property test's random payloads add more (12 to 15 seen).
    expect(puts.memory).toBeGreaterThanOrEqual(3);
    expect(puts.sqlite).toBeGreaterThanOrEqual(3);
    expect(puts.postgres).toBeGreaterThanOrEqual(3);
  });
});
