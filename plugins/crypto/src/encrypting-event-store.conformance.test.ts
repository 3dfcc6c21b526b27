import { CoalescingEventStore } from '@loom/event-runtime';
import {
  type EventStoreSection,
  eventStoreConformance,
  forwardingConformance,
} from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { encryptingEventStore } from './encrypting-event-store.js';
import { isEncryptedField } from './field-cipher.js';
import { InMemoryKeyring } from './in-memory-keyring.js';
import type { SensitiveFields } from './sensitive-fields.js';
import { backendNames, useBackends } from './store-harness.test-support.js';

const backends = useBackends();

// The kernel's one EventStore suite, unchanged, through the decorator: with an empty map (inert),
// and with a map that encrypts fields of event types the suite writes (its `test.event.1` payload
// `{ n: 1 }`, the `reason` of `execution.cancelled`), so those fields are ciphertext in the inner
// store and everything the suite observes is still what a plain store gives.
const maps: Array<[string, SensitiveFields]> = [
  ['empty map', {}],
  [
    'fields encrypted',
    {
      'test.event.1': { subject: () => 'conformance-subject', fields: ['n'] },
      'execution.cancelled': { subject: () => 'conformance-subject', fields: ['reason'] },
    },
  ],
];

// The suite above passes through a map that really encrypts: the fields it marks are
// ciphertext in the inner store, not left as they were.
describe('the encrypting variant of the conformance harness', () => {
  for (const backend of backendNames) {
    it(`stores test.event.1's n as ciphertext on ${backend}`, async () => {
      const raw = await backends.open(backend);
      try {
        const keyring = new InMemoryKeyring();
        const store = encryptingEventStore(raw.store, { sensitive: maps[1]?.[1] ?? {}, keyring });
        const id = `conformance-proof-${backend}-${process.pid}`;
        await store.append(
          [0, 1].map((n) => ({
            executionId: id,
            sequence: n,
            type: `test.event.${n}`,
            payload: { n },
          })),
        );
        expect(JSON.parse(await raw.payloadText(id, 0))).toEqual({ n: 0 });
        expect(isEncryptedField(JSON.parse(await raw.payloadText(id, 1)).n)).toBe(true);
        expect((await store.read(id)).map((event) => event.payload)).toEqual([{ n: 0 }, { n: 1 }]);
      } finally {
        await raw.close();
      }
    });
  }
});

describe('a CoalescingEventStore over the decorator', () => {
  for (const backend of ['sqlite', 'postgres'] as const) {
    it(`sends its appends as appendBatch calls, which seal (${backend})`, async () => {
      const raw = await backends.open(backend);
      try {
        const encrypting = encryptingEventStore(raw.store, {
          sensitive: maps[1]?.[1] ?? {},
          keyring: new InMemoryKeyring(),
        });
        let batches = 0;
        const appendBatch = encrypting.appendBatch?.bind(encrypting);
        if (appendBatch === undefined) throw new Error(`no appendBatch over ${backend}`);
        Object.assign(encrypting, {
          appendBatch: (requests: Parameters<typeof appendBatch>[0]) => {
            batches += 1;
            return appendBatch(requests);
          },
        });
        const store = new CoalescingEventStore(encrypting);
        const id = `coalesced-${backend}-${process.pid}`;
        const stored = await store.append([
          { executionId: id, sequence: 0, type: 'test.event.1', payload: { n: 5 } },
        ]);
        expect(stored[0]?.payload).toEqual({ n: 5 });
        expect(batches).toBe(1);
        expect(isEncryptedField(JSON.parse(await raw.payloadText(id, 0)).n)).toBe(true);
      } finally {
        await raw.close();
      }
    });
  }
});

// The decorator changes the calls that carry payloads (appends of every kind, reads, signals,
// subscriptions); the rest is proven forwarded. The whole suite runs over memory with both maps;
// over SQLite and Postgres, with fields encrypted, the sections that move payloads.
forwardingConformance('encryptingEventStore', {
  wrap: (inner) =>
    encryptingEventStore(inner, { sensitive: maps[1]?.[1] ?? {}, keyring: new InMemoryKeyring() }),
  changes: [
    'append',
    'appendBatch',
    'transact',
    'read',
    'readAll',
    'subscribe',
    'sendSignal',
    'readSignals',
  ],
});
const payloadSections: EventStoreSection[] = [
  'append and read',
  'readAll',
  'signals and due executions',
  'subscribe',
  'hash chain',
  'round-trip fidelity',
  'bad input',
  'ill-formed text in ids, types and names',
];

for (const backend of backendNames) {
  for (const [what, sensitive] of maps) {
    // The empty map is the inert path: the same code over every backend, run whole over memory.
    if (backend !== 'memory' && Object.keys(sensitive).length === 0) continue;
    eventStoreConformance(
      `encrypting over ${backend}, ${what}`,
      async () => {
        const raw = await backends.open(backend);
        const keyring = new InMemoryKeyring();
        const wrap = (store: typeof raw.store) =>
          encryptingEventStore(store, { sensitive, keyring });
        return {
          store: wrap(raw.store),
          openPeer: async () => wrap(await raw.openPeer()),
          countRows: raw.countRows,
          tamper: raw.tamper,
          close: raw.close,
        };
      },
      backend === 'memory' ? {} : { sections: payloadSections },
    );
  }
}

// The same suite with a CoalescingEventStore outside the decorator: every append of the suite
// reaches the decorator as an `appendBatch` (SQLite and Postgres have it; memory does not), so
// the batch path seals and opens like `append`.
for (const backend of ['sqlite', 'postgres'] as const) {
  const sensitive = maps[1]?.[1] ?? {};
  eventStoreConformance(
    `coalescing over encrypting over ${backend}, fields encrypted`,
    async () => {
      const raw = await backends.open(backend);
      const keyring = new InMemoryKeyring();
      const wrap = (store: typeof raw.store) =>
        new CoalescingEventStore(encryptingEventStore(store, { sensitive, keyring }));
      return {
        store: wrap(raw.store),
        openPeer: async () => wrap(await raw.openPeer()),
        countRows: raw.countRows,
        tamper: raw.tamper,
        close: raw.close,
      };
    },
    { sections: ['append and read', 'round-trip fidelity', 'bad input'] },
  );
}
