import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JsonValue } from '../envelope.js';
import { ErrorCode, type LoomError } from '../errors.js';
import { Limits } from '../limits.js';
import type { Snapshot, SnapshotStore } from '../snapshot-store.js';
import { expectIllFormed, freshId, illFormedTexts } from './event-store-conformance.js';

/** What a backend hands the snapshot conformance suite for one test. */
export interface SnapshotStoreHarness {
  /** A writable store on a fresh (or at least test-private) database. */
  store: SnapshotStore;
  /** A second, independent handle on the same database (another connection). */
  openPeer(): Promise<SnapshotStore>;
  /** Release everything (the store, peers, throwaway files). */
  close(): Promise<void>;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as LoomError).code ?? `untyped: ${String(error)}`;
  }
  return 'resolved';
}

function snap(executionId: string, sequence: number, state: JsonValue = { n: sequence }): Snapshot {
  return { executionId, sequence, state, at: 1_700_000_000_000 + sequence };
}

/**
 * The one behaviour suite every `SnapshotStore` backend must pass, unchanged. Call it from a
 * `*.test.ts` with a factory for a fresh harness per test.
 *
 * @example
 * snapshotStoreConformance('memory', async () => {
 *   const store = new InMemorySnapshotStore();
 *   return { store, openPeer: async () => viewOf(store), close: () => store.close() };
 * });
 */
export function snapshotStoreConformance(
  name: string,
  open: () => Promise<SnapshotStoreHarness>,
): void {
  describe(`SnapshotStore conformance: ${name}`, () => {
    let harness: SnapshotStoreHarness;
    let store: SnapshotStore;

    beforeEach(async () => {
      harness = await open();
      store = harness.store;
    });
    afterEach(async () => {
      await harness.close();
    });

    describe('save and load', () => {
      it('load of an execution never snapshotted is undefined', async () => {
        expect(await store.load(freshId('none'))).toBeUndefined();
      });

      it('load returns what save stored', async () => {
        const id = freshId('snap');
        const snapshot = snap(id, 4, { total: 12, lines: ['a', 'b'] });
        await store.save(snapshot);
        expect(await store.load(id)).toEqual(snapshot);
      });

      it('the newest sequence wins: a lower or equal one is ignored', async () => {
        const id = freshId('newest');
        await store.save(snap(id, 5, 'five'));
        await store.save(snap(id, 3, 'three'));
        expect(await store.load(id)).toEqual(snap(id, 5, 'five'));
        await store.save({ ...snap(id, 5, 'five again'), at: 1 });
        expect(await store.load(id)).toEqual(snap(id, 5, 'five'));
        await store.save(snap(id, 9, 'nine'));
        expect(await store.load(id)).toEqual(snap(id, 9, 'nine'));
        await store.save(snap(id, 0, 'zero'));
        expect(await store.load(id)).toEqual(snap(id, 9, 'nine'));
      });

      it('racing savers on two handles leave the highest sequence', async () => {
        const peer = await harness.openPeer();
        try {
          const id = freshId('race');
          const order = [7, 2, 19, 0, 11, 4, 16, 9, 1, 13, 18, 3, 6, 15, 10, 5, 17, 8, 12, 14];
          await Promise.all(
            order.map((sequence, index) =>
              (index % 2 === 0 ? store : peer).save(snap(id, sequence)),
            ),
          );
          expect(await store.load(id)).toEqual(snap(id, 19));
          expect(await peer.load(id)).toEqual(snap(id, 19));
        } finally {
          await peer.close();
        }
      });

      it('snapshots of different executions are independent', async () => {
        const [first, second] = [freshId('one'), freshId('two')];
        await store.save(snap(first, 10));
        await store.save(snap(second, 2));
        expect((await store.load(first))?.sequence).toBe(10);
        expect((await store.load(second))?.sequence).toBe(2);
      });
    });

    describe('state fidelity', () => {
      it('edge-case states come back exactly', async () => {
        let nested: JsonValue = 'bottom';
        for (let depth = 0; depth < 200; depth++) nested = { d: [nested] };
        const cases: JsonValue[] = [
          -0,
          [-0, { z: -0 }],
          0,
          '',
          'ünïcødé 🧵 \u0000 \u2028 \ud83d\ude00',
          { '': 'empty key', 'key with "quotes"': true, ключ: 'значение' },
          {},
          [],
          [[], {}],
          Number.MAX_SAFE_INTEGER,
          1e308,
          5e-324,
          0.1 + 0.2,
          '12345678901234567890123',
          nested,
          null,
          false,
          { b: 1, a: 2 },
        ];
        for (const state of cases) {
          const id = freshId('fidelity');
          await store.save(snap(id, 1, state));
          const loaded = await store.load(id);
          expect(loaded?.state).toEqual(state);
          expect(Object.is(loaded?.state, -0)).toBe(Object.is(state, -0));
        }
        const negativeZero = freshId('neg');
        await store.save(snap(negativeZero, 1, [-0, { z: -0 }]));
        const loadedZero = await store.load(negativeZero);
        const [first, second] = (loadedZero as Snapshot).state as [number, { z: number }];
        expect(Object.is(first, -0)).toBe(true);
        expect(Object.is(second.z, -0)).toBe(true);
        const ordered = freshId('order');
        await store.save(snap(ordered, 1, { b: 1, a: 2 }));
        expect(Object.keys((await store.load(ordered))?.state as object)).toEqual(['b', 'a']);
      });

      it('mutating a saved or loaded state never changes the store', async () => {
        const id = freshId('isolation');
        const state = { list: [1, 2], nested: { flag: true } };
        await store.save(snap(id, 1, state));
        state.list.push(99);
        state.nested.flag = false;
        const loaded = (await store.load(id)) as Snapshot;
        (loaded.state as { list: number[] }).list.push(3);
        loaded.sequence = 1_000;
        const again = await store.load(id);
        expect(again).toEqual(snap(id, 1, { list: [1, 2], nested: { flag: true } }));
        expect(again?.state).not.toBe(loaded.state);
      });
    });

    describe('bad input', () => {
      const badStates: Array<[string, () => unknown]> = [
        ['a function', () => ({ f: () => 1 })],
        ['undefined', () => ({ u: undefined })],
        ['a BigInt', () => ({ big: 10n })],
        ['NaN', () => [Number.NaN]],
        ['a Date', () => ({ when: new Date(0) })],
        [
          'a cycle',
          () => {
            const cyclic: Record<string, unknown> = { a: 1 };
            cyclic.self = cyclic;
            return cyclic;
          },
        ],
      ];
      for (const [what, make] of badStates) {
        it(`a state with ${what} is PAYLOAD_NOT_JSON and stores nothing`, async () => {
          const id = freshId('bad-state');
          const bad = { ...snap(id, 3), state: make() as JsonValue };
          expect(await codeOf(store.save(bad))).toBe(ErrorCode.PAYLOAD_NOT_JSON);
          expect(await store.load(id)).toBeUndefined();
          await store.save(snap(id, 1));
          expect(await codeOf(store.save(bad))).toBe(ErrorCode.PAYLOAD_NOT_JSON);
          expect(await store.load(id)).toEqual(snap(id, 1));
        });
      }

      it('a state nested past payloadDepthMax is LIMIT_EXCEEDED', async () => {
        let deep: JsonValue = 1;
        for (let depth = 0; depth < Limits.payloadDepthMax + 1; depth++) deep = [deep];
        const id = freshId('deep');
        expect(await codeOf(store.save(snap(id, 1, deep)))).toBe(ErrorCode.LIMIT_EXCEEDED);
        expect(await store.load(id)).toBeUndefined();
      });

      it('takes a state of snapshotBytesMax bytes and refuses one byte more', async () => {
        const id = freshId('big');
        // 'é' is two UTF-8 bytes: max - 2 of them, one 'a' and the two quotes make max + 1 bytes.
        const over = `${'é'.repeat(Limits.snapshotBytesMax / 2 - 1)}a`;
        const error = await store.save(snap(id, 2, over)).catch((caught: LoomError) => caught);
        expect((error as LoomError).code).toBe(ErrorCode.LIMIT_EXCEEDED);
        expect((error as LoomError).fields.limit).toBe('snapshotBytesMax');
        expect(await store.load(id)).toBeUndefined();
        const exact = 'a'.repeat(Limits.snapshotBytesMax - 2);
        await store.save(snap(id, 1, exact));
        const loadedExact = await store.load(id);
        expect(((loadedExact as Snapshot).state as string).length).toBe(exact.length);
      });

      const badSnapshots: Array<[string, (id: string) => unknown, string]> = [
        ['an empty execution id', () => snap('', 1), ErrorCode.INVALID_ENVELOPE],
        [
          'an oversized execution id',
          () => snap('x'.repeat(Limits.executionIdLengthMax + 1), 1),
          ErrorCode.LIMIT_EXCEEDED,
        ],
        ['a negative sequence', (id) => snap(id, -1), ErrorCode.INVALID_ENVELOPE],
        ['a fractional sequence', (id) => snap(id, 1.5), ErrorCode.INVALID_ENVELOPE],
        [
          'a string sequence',
          (id) => ({ ...snap(id, 1), sequence: '1' }),
          ErrorCode.INVALID_ENVELOPE,
        ],
        ['a negative at', (id) => ({ ...snap(id, 1), at: -1 }), ErrorCode.INVALID_ENVELOPE],
        [
          'a missing at',
          (id) => ({ executionId: id, sequence: 1, state: null }),
          ErrorCode.INVALID_ENVELOPE,
        ],
        [
          'a missing state',
          (id) => ({ executionId: id, sequence: 1, at: 5 }),
          ErrorCode.INVALID_ENVELOPE,
        ],
        ['an unknown field', (id) => ({ ...snap(id, 1), extra: 1 }), ErrorCode.INVALID_ENVELOPE],
        ['null', () => null, ErrorCode.INVALID_ENVELOPE],
      ];
      for (const [what, make, code] of badSnapshots) {
        it(`a snapshot with ${what} is ${code} and stores nothing`, async () => {
          const id = freshId('bad');
          expect(await codeOf(store.save(make(id) as Snapshot))).toBe(code);
          expect(await store.load(id)).toBeUndefined();
        });
      }

      it('load with a bad id is a typed error', async () => {
        expect(await codeOf(store.load(''))).toBe(ErrorCode.INVALID_ENVELOPE);
        expect(await codeOf(store.load('x'.repeat(Limits.executionIdLengthMax + 1)))).toBe(
          ErrorCode.LIMIT_EXCEEDED,
        );
      });

      it('a closed store refuses calls with STORE_CLOSED; other handles carry on', async () => {
        const peer = await harness.openPeer();
        const id = freshId('closed');
        await peer.close();
        await peer.close();
        expect(await codeOf(peer.save(snap(id, 1)))).toBe(ErrorCode.STORE_CLOSED);
        expect(await codeOf(peer.load(id))).toBe(ErrorCode.STORE_CLOSED);
        await store.save(snap(id, 1));
        expect(await store.load(id)).toEqual(snap(id, 1));
      });
    });

    describe('ill-formed text in execution ids', () => {
      for (const [what, bad, position] of illFormedTexts) {
        it(`${what} in an execution id is INVALID_ENVELOPE for save and load; state strings keep it`, async () => {
          const snapshot = { executionId: bad, sequence: 1, state: { n: 1 }, at: 1 };
          const invalid = ErrorCode.INVALID_ENVELOPE;
          await expectIllFormed(store.save(snapshot), invalid, 'executionId', position);
          await expectIllFormed(store.load(bad), invalid, 'executionId', position);
          const replaced = bad.replace(/[\uD800-\uDFFF]/g, '\uFFFD').replaceAll('\u0000', '\uFFFD');
          expect(await store.load(replaced)).toBeUndefined();
          const id = freshId('text');
          const state = { [bad]: bad };
          await store.save({ executionId: id, sequence: 1, state, at: 1 });
          expect((await store.load(id))?.state).toEqual(state);
        });
      }
    });
  });
}
