import {
  type EventEnvelope,
  InMemoryEventStore,
  type JsonValue,
  type StoredEvent,
} from '@loom/event-runtime';
import { until } from '@loom/event-runtime/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type EncryptingEventStore,
  encryptingEventStore,
  erasureReceiptId,
} from './encrypting-event-store.js';
import { isEncryptedField, isErased } from './field-cipher.js';
import { InMemoryKeyring } from './in-memory-keyring.js';
import type { KeyLookup, KeyRef, Keyring } from './keyring.js';
import type { SensitiveFields } from './sensitive-fields.js';
import { backendNames, type RawStore, useBackends } from './store-harness.test-support.js';

const backends = useBackends();

/** A keyring that counts lookups (one per read batch is the promise). */
class CountingKeyring implements Keyring {
  lookups = 0;
  constructor(readonly inner: Keyring) {}
  current(subject: string) {
    return this.inner.current(subject);
  }
  lookup(refs: readonly KeyRef[]): Promise<KeyLookup> {
    this.lookups += 1;
    return this.inner.lookup(refs);
  }
  rotate(subject: string) {
    return this.inner.rotate(subject);
  }
  forget(subject: string) {
    return this.inner.forget(subject);
  }
  close() {
    return this.inner.close();
  }
}

const sensitive: SensitiveFields = {
  'user.registered': {
    subject: 'userId',
    fields: ['email', 'address.street', 'cards[].number', 'tags[]'],
  },
  'order.placed': {
    subject: (envelope) => (envelope.payload as { buyer?: string }).buyer,
    fields: ['note'],
  },
};

const registered = (id: string, sequence: number, userId: string): EventEnvelope => ({
  executionId: id,
  sequence,
  type: 'user.registered',
  payload: {
    userId,
    email: `${userId}@example.com`,
    plan: 'pro',
    address: { street: '1 Secret Lane', city: 'Lyon' },
    cards: [
      { number: '4111-1111', brand: 'visa' },
      { number: '5500-0000', brand: 'mc' },
    ],
    tags: ['vip', 'beta'],
  },
});

let ids = 0;
const freshId = () => `crypto-${process.pid}-${Date.now().toString(36)}-${++ids}`;

async function failure(promise: Promise<unknown>) {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: { code?: string; fields?: Record<string, unknown> }) => error,
  );
}

for (const backend of backendNames) {
  describe(`encryptingEventStore over ${backend}`, () => {
    let raw: RawStore;
    let keyring: CountingKeyring;
    let store: EncryptingEventStore;
    beforeEach(async () => {
      raw = await backends.open(backend);
      keyring = new CountingKeyring(new InMemoryKeyring());
      store = encryptingEventStore(raw.store, { sensitive, keyring });
    });
    afterEach(async () => {
      await raw.close();
    });

    it('marked fields are ciphertext where stored, plaintext when read; the rest is untouched', async () => {
      const id = freshId();
      const envelope = registered(id, 0, 'ada');
      const appended = await store.append([envelope]);
      const text = await raw.payloadText(id, 0);
      for (const secret of [
        'ada@example.com',
        '1 Secret Lane',
        '4111-1111',
        '5500-0000',
        'vip',
        'beta',
      ])
        expect(text).not.toContain(secret);
      for (const clear of ['"plan"', '"pro"', 'Lyon', 'visa', '"userId"'])
        expect(text).toContain(clear);
      const stored = JSON.parse(text);
      for (const field of [
        stored.email,
        stored.address.street,
        stored.cards[1].number,
        stored.tags[0],
      ]) {
        expect(isEncryptedField(field)).toBe(true);
        expect(field).toMatchObject({ $enc: 'aes-256-gcm', kid: 'ada', kv: 1 });
      }
      const [read] = await store.read(id);
      expect(read?.payload).toEqual(envelope.payload);
      expect(appended).toEqual(await store.read(id));
      // On Postgres readAll returns only rows below the oldest transaction still open anywhere on
      // the cluster (so it never skips a late commit): another test's open transaction can hide
      // this append for a moment. Wait for it, with a real deadline.
      let all: StoredEvent[] = [];
      await until(async () => {
        all = await store.readAll();
        return all.length >= appended.length;
      }, 'readAll to see the append');
      expect(all).toEqual(appended);
      expect((await store.verify(id)).ok).toBe(true);
    });

    it('the caller’s payload is not changed, and one read batch costs one keyring lookup', async () => {
      const id = freshId();
      const envelopes = [
        registered(id, 0, 'ada'),
        registered(id, 1, 'bob'),
        registered(id, 2, 'ada'),
      ];
      const copy = structuredClone(envelopes);
      await store.append(envelopes);
      expect(envelopes).toEqual(copy);
      keyring.lookups = 0;
      const read = await store.read(id);
      expect(read.map((event) => event.payload)).toEqual(copy.map((envelope) => envelope.payload));
      expect(keyring.lookups).toBe(1);
    });

    it('subscribe delivers decrypted events', async () => {
      const id = freshId();
      const seen: StoredEvent[] = [];
      let resolve!: () => void;
      const done = new Promise<void>((r) => (resolve = r));
      const subscription = store.subscribe({ executionId: id }, (events) => {
        seen.push(...events);
        if (seen.length >= 1) resolve();
      });
      await store.append([registered(id, 0, 'ada')]);
      await Promise.race([
        done,
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error('no delivery in 5 s')), 5_000),
        ),
      ]);
      await subscription.close();
      expect((seen[0]?.payload as { email?: string } | undefined)?.email).toBe('ada@example.com');
    });

    it('forget: reads return Erased and never throw, verify holds, a receipt is appended', async () => {
      const id = freshId();
      await store.append([registered(id, 0, 'ada'), registered(id, 1, 'bob')]);
      const receipt = await store.forget('ada');
      expect(receipt).toMatchObject({ subject: 'ada', keysDestroyed: 1, alreadyForgotten: false });
      const [ada, bob] = await store.read(id);
      const payload = ada?.payload as Record<string, JsonValue> & { address: { city: string } };
      expect(payload.email).toEqual({ $erased: true, subject: 'ada', keyVersion: 1 });
      expect(isErased(payload.email)).toBe(true);
      expect(isErased((payload.cards as Array<{ number: JsonValue }>)[0]?.number)).toBe(true);
      expect(isErased((payload.tags as JsonValue[])[1])).toBe(true);
      expect(payload.plan).toBe('pro');
      expect(payload.address.city).toBe('Lyon');
      expect((bob?.payload as { email?: string } | undefined)?.email).toBe('bob@example.com');
      expect(await store.verify(id)).toMatchObject({ ok: true, events: 2 });
      const [receiptEvent] = await raw.store.read(erasureReceiptId('ada'));
      expect(receiptEvent).toMatchObject({
        type: 'crypto.subject_forgotten',
        payload: { subject: 'ada', keysDestroyed: 1, alreadyForgotten: false },
      });
      const again = await store.forget('ada');
      expect(again).toMatchObject({ keysDestroyed: 0, alreadyForgotten: true, at: receipt.at });
      expect(await raw.countRows(erasureReceiptId('ada'))).toBe(1);
    });

    it('a write for a forgotten subject is SUBJECT_FORGOTTEN and writes nothing', async () => {
      await store.forget('ada');
      const id = freshId();
      const error = await failure(store.append([registered(id, 0, 'ada')]));
      expect(error.code).toBe('SUBJECT_FORGOTTEN');
      expect(error.fields?.subject).toBe('ada');
      expect(await raw.countRows(id)).toBe(0);
    });

    it('after forget, an Erased marker carried forward is written as is (a replay needs no key)', async () => {
      const id = freshId();
      await store.append([registered(id, 0, 'ada')]);
      await store.forget('ada');
      const [read] = await store.read(id);
      const email = (read?.payload as { email: JsonValue } | undefined)?.email ?? null;
      const carried = { userId: 'ada', email, plan: 'pro' };
      await store.append([
        { executionId: id, sequence: 1, type: 'user.registered', payload: carried },
      ]);
      expect(JSON.parse(await raw.payloadText(id, 1))).toEqual(carried);
      expect((await store.read(id, { fromSequence: 1 }))[0]?.payload).toEqual(carried);
    });

    it('rotation: new writes use the new version, old ones stay readable', async () => {
      const id = freshId();
      await store.append([registered(id, 0, 'ada')]);
      expect(await keyring.rotate('ada')).toBe(2);
      await store.append([registered(id, 1, 'ada')]);
      expect(JSON.parse(await raw.payloadText(id, 0)).email.kv).toBe(1);
      expect(JSON.parse(await raw.payloadText(id, 1)).email.kv).toBe(2);
      const read = await store.read(id);
      expect(read.map((event) => (event.payload as { email: string }).email)).toEqual([
        'ada@example.com',
        'ada@example.com',
      ]);
    });

    it('a changed ciphertext is CRYPTO_INTEGRITY naming execution, sequence and path', async () => {
      const id = freshId();
      await store.append([registered(id, 0, 'ada'), registered(id, 1, 'ada')]);
      const stored = JSON.parse(await raw.payloadText(id, 1));
      const ct = Buffer.from(stored.cards[1].number.ct, 'base64');
      ct[0] = (ct[0] as number) ^ 1;
      stored.cards[1].number.ct = ct.toString('base64');
      await raw.tamper(id, 1, JSON.stringify(stored));
      const error = await failure(store.read(id));
      expect(error.code).toBe('CRYPTO_INTEGRITY');
      expect(error.fields).toMatchObject({
        executionId: id,
        sequence: 1,
        path: '$.cards[1].number',
      });
      expect((await store.verify(id)).ok).toBe(false);
    });

    it('a ciphertext moved to another event or field does not decrypt', async () => {
      const id = freshId();
      await store.append([registered(id, 0, 'ada'), registered(id, 1, 'ada')]);
      const first = JSON.parse(await raw.payloadText(id, 0));
      const second = JSON.parse(await raw.payloadText(id, 1));
      second.email = first.email;
      await raw.tamper(id, 1, JSON.stringify(second));
      expect(await failure(store.read(id, { fromSequence: 1 }))).toMatchObject({
        code: 'CRYPTO_INTEGRITY',
        fields: { sequence: 1, path: '$.email' },
      });
      first.tags[0] = first.tags[1];
      await raw.tamper(id, 0, JSON.stringify(first));
      expect(await failure(store.read(id, { limit: 1 }))).toMatchObject({
        code: 'CRYPTO_INTEGRITY',
        fields: { sequence: 0, path: '$.tags[0]' },
      });
    });

    it('a store read with another keyring is KEY_NOT_FOUND', async () => {
      const id = freshId();
      await store.append([registered(id, 0, 'ada')]);
      const stranger = encryptingEventStore(raw.store, {
        sensitive,
        keyring: new InMemoryKeyring(),
      });
      expect(await failure(stranger.read(id))).toMatchObject({
        code: 'KEY_NOT_FOUND',
        fields: { executionId: id, sequence: 0, subject: 'ada', keyVersion: 1 },
      });
    });

    it('an event without a usable subject is CRYPTO_SUBJECT_MISSING and writes nothing', async () => {
      for (const buyer of [undefined, '', 42, 'x'.repeat(257)]) {
        const id = freshId();
        const error = await failure(
          store.append([
            { executionId: id, sequence: 0, type: 'plain', payload: {} },
            {
              executionId: id,
              sequence: 1,
              type: 'order.placed',
              payload: { buyer: buyer ?? null, note: 'n' },
            },
          ] as EventEnvelope[]),
        );
        expect(error).toMatchObject({
          code: 'CRYPTO_SUBJECT_MISSING',
          fields: { executionId: id, sequence: 1, type: 'order.placed' },
        });
        expect(await raw.countRows(id)).toBe(0);
      }
    });

    it('an event whose marked fields are absent needs no subject', async () => {
      const id = freshId();
      const payload = { buyer: null, total: 12 };
      await store.append([{ executionId: id, sequence: 0, type: 'order.placed', payload }]);
      expect((await store.read(id))[0]?.payload).toEqual(payload);
    });

    it('a sensitive value that is not JSON is PAYLOAD_NOT_JSON and writes nothing', async () => {
      const id = freshId();
      const error = await failure(
        store.append([
          {
            executionId: id,
            sequence: 0,
            type: 'order.placed',
            payload: { buyer: 'ada', note: (() => 1) as never },
          },
        ]),
      );
      expect(error.code).toBe('PAYLOAD_NOT_JSON');
      expect(await raw.countRows(id)).toBe(0);
    });

    it('absent paths are skipped; a value of another shape than its path is encrypted whole', async () => {
      const id = freshId();
      const payloads: JsonValue[] = [
        { userId: 'ada' },
        { userId: 'ada', address: '1 Secret Lane, Lyon', cards: { number: '4111' }, tags: null },
        { userId: 'ada', cards: ['4111-1111', null, { brand: 'visa' }], email: null },
      ];
      await store.append(
        payloads.map((payload, sequence) => ({
          executionId: id,
          sequence,
          type: 'user.registered',
          payload,
        })),
      );
      expect(JSON.parse(await raw.payloadText(id, 0))).toEqual({ userId: 'ada' });
      const second = JSON.parse(await raw.payloadText(id, 1));
      expect(isEncryptedField(second.address)).toBe(true);
      expect(isEncryptedField(second.cards)).toBe(true);
      expect(second.tags).toBeNull();
      const third = JSON.parse(await raw.payloadText(id, 2));
      expect(isEncryptedField(third.cards[0])).toBe(true);
      expect(third.cards[1]).toBeNull();
      expect(third.cards[2]).toEqual({ brand: 'visa' });
      expect(isEncryptedField(third.email)).toBe(true);
      expect((await store.read(id)).map((event) => event.payload)).toEqual(payloads);
    });
  });
}

describe('the sensitive map', () => {
  const inner = () => new InMemoryKeyring();
  const bad: Array<[string, unknown, string]> = [
    ['not an object', 'email', 'map'],
    ['a rule that is not an object', { t: null }, "['t']"],
    ['no fields', { t: { subject: 'id', fields: [] } }, "['t'].fields"],
    ['a field that is not a string', { t: { subject: 'id', fields: [3] } }, "['t'].fields[0]"],
    ['an empty segment', { t: { subject: 'id', fields: ['a..b'] } }, "['t'].fields[0]"],
    ['[] inside a name', { t: { subject: 'id', fields: ['a[]b'] } }, "['t'].fields[0]"],
    ['one path inside another', { t: { subject: 'id', fields: ['a', 'a.b'] } }, "['t'].fields[1]"],
    ['the other way round', { t: { subject: 'id', fields: ['a.b', 'a'] } }, "['t'].fields[1]"],
    ['an array and not', { t: { subject: 'id', fields: ['a[].b', 'a.c'] } }, "['t'].fields[1]"],
    ['no subject', { t: { fields: ['a'] } }, "['t'].subject"],
    ['an empty subject segment', { t: { subject: 'user.', fields: ['a'] } }, "['t'].subject"],
  ];
  for (const [what, map, option] of bad) {
    it(`${what} is INVALID_ARGUMENT naming ${option}`, () => {
      let caught: { code?: string; fields?: { option?: string } } | undefined;
      try {
        encryptingEventStore(new InMemoryEventStore(), {
          sensitive: map as SensitiveFields,
          keyring: inner(),
        });
      } catch (error) {
        caught = error as typeof caught;
      }
      expect(caught?.code).toBe('INVALID_ARGUMENT');
      expect(caught?.fields?.option).toBe(option);
    });
  }

  it('a missing keyring is INVALID_ARGUMENT', () => {
    expect(() =>
      encryptingEventStore({} as never, { sensitive: {}, keyring: undefined as never }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', fields: { option: 'keyring' } }));
  });
});
