import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode, type LoomError } from '../errors.js';
import type { LeaseStore } from '../lease-store.js';
import { Limits } from '../limits.js';
import { expectIllFormed, freshId, illFormedTexts } from './event-store-conformance.js';
import type { TestClock } from './manual-clock.js';

/** What a backend hands the lease conformance suite for one test. */
export interface LeaseStoreHarness {
  /** A writable store on a fresh (or at least test-private) database, judging time by `clock`. */
  store: LeaseStore;
  /** The clock `store` and every peer read; the suite advances it instead of sleeping. */
  clock: TestClock;
  /** A second, independent handle on the same database (another connection), on `clock` too. */
  openPeer(): Promise<LeaseStore>;
  /** Release everything (the store, peers, throwaway files). */
  close(): Promise<void>;
}

const ttlMs = 1_000;

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as LoomError).code ?? `untyped: ${String(error)}`;
  }
  return 'resolved';
}

function ids(prefix: string, count: number): string[] {
  const base = freshId(prefix);
  return Array.from({ length: count }, (_, index) => `${base}-${index}`);
}

/** The arguments of a lease batch call, loosely typed so a test can spoil any of them. */
interface Args {
  owner: unknown;
  batch: unknown;
  ttl: unknown;
}

/** The well-formed arguments a bad-input case spoils. */
interface GoodArgs {
  owner: string;
  batch: string[];
  ttl: number;
}

// Called through a promise so a synchronous throw counts as a rejection, as a caller would see it.
const calls: Array<[string, (store: LeaseStore, args: Args) => Promise<unknown>]> = [
  [
    'acquireMany',
    async (store, { owner, batch, ttl }) =>
      store.acquireMany(owner as string, batch as string[], ttl as number),
  ],
  [
    'renewMany',
    async (store, { owner, batch, ttl }) =>
      store.renewMany(owner as string, batch as string[], ttl as number),
  ],
  [
    'releaseMany',
    async (store, { owner, batch }) => store.releaseMany(owner as string, batch as string[]),
  ],
];

/**
 * The one behaviour suite every `LeaseStore` backend must pass, unchanged. Time is the harness's
 * `clock`: the suite advances it, it never sleeps. Call it from a `*.test.ts` with a factory for
 * a fresh harness per test.
 *
 * @example
 * leaseStoreConformance('memory', async () => {
 *   const clock = new ManualClock();
 *   const store = new InMemoryLeaseStore({ clock });
 *   return { store, clock, openPeer: async () => viewOf(store), close: () => store.close() };
 * });
 */
export function leaseStoreConformance(name: string, open: () => Promise<LeaseStoreHarness>): void {
  describe(`LeaseStore conformance: ${name}`, () => {
    let harness: LeaseStoreHarness;
    let store: LeaseStore;
    let clock: TestClock;

    beforeEach(async () => {
      harness = await open();
      store = harness.store;
      clock = harness.clock;
    });
    afterEach(async () => {
      await harness.close();
    });

    describe('acquire', () => {
      it('grants a free lease and records owner and expiry', async () => {
        const id = freshId('lease');
        expect(await store.get(id)).toBeUndefined();
        expect(await store.acquireMany('node-a', [id], ttlMs)).toEqual(new Set([id]));
        expect(await store.get(id)).toEqual({
          executionId: id,
          owner: 'node-a',
          expiresAtMs: clock.now() + ttlMs,
        });
      });

      it('denies a live lease to another owner and hands it over once it expired', async () => {
        const id = freshId('lease');
        const start = clock.now();
        await store.acquireMany('node-a', [id], ttlMs);
        await clock.advance(ttlMs - 1);
        expect(await store.acquireMany('node-b', [id], ttlMs)).toEqual(new Set());
        expect((await store.get(id))?.owner).toBe('node-a');
        await clock.advance(1); // expires_at_ms <= now: expired
        expect(await store.acquireMany('node-b', [id], ttlMs)).toEqual(new Set([id]));
        expect(await store.get(id)).toEqual({
          executionId: id,
          owner: 'node-b',
          expiresAtMs: start + 2 * ttlMs,
        });
        expect(await store.acquireMany('node-a', [id], ttlMs)).toEqual(new Set());
      });

      it('acquire by the holder extends its lease', async () => {
        const id = freshId('lease');
        const start = clock.now();
        await store.acquireMany('node-a', [id], ttlMs);
        await clock.advance(400);
        expect(await store.acquireMany('node-a', [id], ttlMs)).toEqual(new Set([id]));
        expect((await store.get(id))?.expiresAtMs).toBe(start + 400 + ttlMs);
        await clock.advance(ttlMs + 5);
        expect(await store.acquireMany('node-a', [id], 50)).toEqual(new Set([id]));
        expect((await store.get(id))?.expiresAtMs).toBe(clock.now() + 50);
      });

      it('one batch grants free, expired and own ids and denies live ones of others', async () => {
        const [free, expired, own, held] = ids('mixed', 4) as [string, string, string, string];
        await store.acquireMany('node-b', [expired], 100);
        await store.acquireMany('node-a', [own], ttlMs);
        await store.acquireMany('node-b', [held], ttlMs);
        await clock.advance(100);
        const granted = await store.acquireMany('node-a', [free, held, expired, own], ttlMs);
        expect(granted).toEqual(new Set([free, expired, own]));
        for (const id of [free, expired, own]) {
          expect(await store.get(id)).toEqual({
            executionId: id,
            owner: 'node-a',
            expiresAtMs: clock.now() + ttlMs,
          });
        }
        expect(await store.get(held)).toEqual({
          executionId: held,
          owner: 'node-b',
          expiresAtMs: clock.now() - 100 + ttlMs,
        });
      });

      it('a duplicate id in a batch counts once', async () => {
        const id = freshId('dup');
        expect(await store.acquireMany('node-a', [id, id, id], ttlMs)).toEqual(new Set([id]));
        expect(await store.renewMany('node-b', [id, id], ttlMs)).toEqual([id]);
      });

      it('ids with unicode, quotes and backslashes survive a batch', async () => {
        const base = freshId('odd');
        const odd = [
          `${base}-ünïcødé-🧵`,
          `${base}-"quoted"`,
          `${base}-back\\slash`,
          `${base}-[1]`,
        ];
        expect(await store.acquireMany('node-ä', odd, ttlMs)).toEqual(new Set(odd));
        for (const id of odd) expect((await store.get(id))?.owner).toBe('node-ä');
        expect(await store.renewMany('node-ä', odd, ttlMs)).toEqual([]);
        await store.releaseMany('node-ä', odd);
        for (const id of odd) expect(await store.get(id)).toBeUndefined();
      });

      it('a returned lease is a copy: mutating it changes nothing', async () => {
        const id = freshId('copy');
        await store.acquireMany('node-a', [id], ttlMs);
        const lease = await store.get(id);
        if (lease !== undefined) lease.owner = 'node-z';
        expect((await store.get(id))?.owner).toBe('node-a');
      });
    });

    describe('renew', () => {
      it('extends held leases and reports none lost', async () => {
        const batch = ids('renew', 3);
        await store.acquireMany('node-a', batch, ttlMs);
        await clock.advance(600);
        expect(await store.renewMany('node-a', batch, ttlMs)).toEqual([]);
        for (const id of batch)
          expect((await store.get(id))?.expiresAtMs).toBe(clock.now() + ttlMs);
        await clock.advance(600); // past the first expiry, not the renewed one
        expect(await store.acquireMany('node-b', batch, ttlMs)).toEqual(new Set());
      });

      it('returns the ids lost to a takeover and leaves the new owner alone', async () => {
        const [taken, kept] = ids('takeover', 2) as [string, string];
        const peer = await harness.openPeer();
        try {
          await store.acquireMany('node-a', [taken, kept], ttlMs);
          await clock.advance(ttlMs);
          expect(await peer.acquireMany('node-b', [taken], 5 * ttlMs)).toEqual(new Set([taken]));
          const takenUntil = clock.now() + 5 * ttlMs;
          await clock.advance(10);
          expect(await store.renewMany('node-a', [taken, kept], ttlMs)).toEqual([taken]);
          expect(await store.get(taken)).toEqual({
            executionId: taken,
            owner: 'node-b',
            expiresAtMs: takenUntil,
          });
          expect(await peer.get(kept)).toEqual({
            executionId: kept,
            owner: 'node-a',
            expiresAtMs: clock.now() + ttlMs,
          });
        } finally {
          await peer.close();
        }
      });

      it('an expired lease nobody took is still its owner to renew', async () => {
        const id = freshId('late');
        await store.acquireMany('node-a', [id], ttlMs);
        await clock.advance(ttlMs * 3);
        expect(await store.renewMany('node-a', [id], ttlMs)).toEqual([]);
        expect(await store.get(id)).toEqual({
          executionId: id,
          owner: 'node-a',
          expiresAtMs: clock.now() + ttlMs,
        });
        expect(await store.acquireMany('node-b', [id], ttlMs)).toEqual(new Set());
      });

      it('reports released and never-taken ids lost, in batch order, and creates no lease', async () => {
        const [released, never, held] = ids('gone', 3) as [string, string, string];
        await store.acquireMany('node-a', [released, held], ttlMs);
        await store.releaseMany('node-a', [released]);
        expect(await store.renewMany('node-a', [never, held, released], ttlMs)).toEqual([
          never,
          released,
        ]);
        expect(await store.get(never)).toBeUndefined();
        expect(await store.get(released)).toBeUndefined();
      });
    });

    describe('release', () => {
      it('frees only the leases the owner holds', async () => {
        const [mine, theirs, free] = ids('release', 3) as [string, string, string];
        await store.acquireMany('node-a', [mine], ttlMs);
        await store.acquireMany('node-b', [theirs], ttlMs);
        await store.releaseMany('node-a', [mine, theirs, free]);
        expect(await store.get(mine)).toBeUndefined();
        expect((await store.get(theirs))?.owner).toBe('node-b');
        expect(await store.get(free)).toBeUndefined();
        expect(await store.acquireMany('node-c', [mine, theirs], ttlMs)).toEqual(new Set([mine]));
      });

      it('releases an own lease even after it expired, but not once it was taken over', async () => {
        const [expired, taken] = ids('release-late', 2) as [string, string];
        await store.acquireMany('node-a', [expired, taken], ttlMs);
        await clock.advance(ttlMs);
        await store.acquireMany('node-b', [taken], ttlMs);
        await store.releaseMany('node-a', [expired, taken]);
        expect(await store.get(expired)).toBeUndefined();
        expect((await store.get(taken))?.owner).toBe('node-b');
      });
    });

    describe('two handles', () => {
      it('of concurrent acquires of one id by two owners exactly one is granted', async () => {
        const peer = await harness.openPeer();
        try {
          for (let round = 0; round < 5; round++) {
            const id = freshId('race');
            const [first, second] = await Promise.all([
              store.acquireMany('node-a', [id], ttlMs),
              peer.acquireMany('node-b', [id], ttlMs),
            ]);
            expect(first.size + second.size).toBe(1);
            const winner = first.size === 1 ? 'node-a' : 'node-b';
            expect((await store.get(id))?.owner).toBe(winner);
            expect((await peer.get(id))?.owner).toBe(winner);
          }
        } finally {
          await peer.close();
        }
      });

      it('many owners racing over one batch split it: each id granted to exactly one owner', async () => {
        const peer = await harness.openPeer();
        try {
          const batch = ids('split', 40);
          const owners = ['node-a', 'node-b', 'node-c', 'node-d'];
          const grants = await Promise.all(
            owners.flatMap((owner, index) =>
              [0, 1, 2, 3].map(async (slice) => ({
                owner,
                granted: await (index % 2 === 0 ? store : peer).acquireMany(
                  owner,
                  batch.slice(slice * 10, slice * 10 + 10 + (index % 3) * 5),
                  ttlMs,
                ),
              })),
            ),
          );
          // An owner's overlapping slices may both be granted an id it won (acquire by the holder
          // extends), so count owners per id, not grants: on a backend whose calls truly run
          // concurrently that happens, and it is the contract, not a double grant.
          const ownersById = new Map<string, Set<string>>();
          for (const { owner, granted } of grants) {
            for (const id of granted)
              ownersById.set(id, (ownersById.get(id) ?? new Set()).add(owner));
          }
          expect([...ownersById.keys()].sort()).toEqual([...batch].sort());
          expect([...ownersById.values()].every((winners) => winners.size === 1)).toBe(true);
          for (const [id, winners] of ownersById) {
            expect((await store.get(id))?.owner).toBe([...winners][0]);
          }
        } finally {
          await peer.close();
        }
      });
    });

    describe('batches and bad input', () => {
      it('empty batches succeed and change nothing', async () => {
        expect(await store.acquireMany('node-a', [], ttlMs)).toEqual(new Set());
        expect(await store.renewMany('node-a', [], ttlMs)).toEqual([]);
        await store.releaseMany('node-a', []);
      });

      it('takes a batch of leaseBatchMax and refuses one more with nothing written', async () => {
        const batch = ids('max', Limits.leaseBatchMax + 1);
        const error = await store
          .acquireMany('node-a', batch, ttlMs)
          .catch((caught: LoomError) => caught);
        expect((error as LoomError).code).toBe(ErrorCode.LIMIT_EXCEEDED);
        expect((error as LoomError).fields.limit).toBe('leaseBatchMax');
        expect(await store.get(batch[0] as string)).toBeUndefined();
        const max = batch.slice(0, Limits.leaseBatchMax);
        expect((await store.acquireMany('node-a', max, ttlMs)).size).toBe(Limits.leaseBatchMax);
        expect(await codeOf(store.renewMany('node-a', batch, ttlMs))).toBe(
          ErrorCode.LIMIT_EXCEEDED,
        );
        expect(await store.renewMany('node-a', max, ttlMs)).toEqual([]);
        expect(await codeOf(store.releaseMany('node-a', batch))).toBe(ErrorCode.LIMIT_EXCEEDED);
        expect((await store.get(batch[0] as string))?.owner).toBe('node-a');
        await store.releaseMany('node-a', max);
        expect(await store.get(batch[0] as string)).toBeUndefined();
      });

      const badArguments: Array<[string, (good: GoodArgs) => Args, string]> = [
        ['an empty owner', (good) => ({ ...good, owner: '' }), ErrorCode.INVALID_ARGUMENT],
        [
          'an owner over 200 characters',
          (good) => ({ ...good, owner: 'n'.repeat(201) }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        ['a numeric owner', (good) => ({ ...good, owner: 7 }), ErrorCode.INVALID_ARGUMENT],
        [
          'ids that are not an array',
          (good) => ({ ...good, batch: good.batch[0] }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'an empty id after good ones',
          (good) => ({ ...good, batch: [...good.batch, ''] }),
          ErrorCode.INVALID_ENVELOPE,
        ],
        [
          'a numeric id after good ones',
          (good) => ({ ...good, batch: [...good.batch, 7] }),
          ErrorCode.INVALID_ENVELOPE,
        ],
        [
          'an oversized id after good ones',
          (good) => ({
            ...good,
            batch: [...good.batch, 'x'.repeat(Limits.executionIdLengthMax + 1)],
          }),
          ErrorCode.LIMIT_EXCEEDED,
        ],
      ];
      const badTtls: Array<[string, unknown]> = [
        ['a zero ttl', 0],
        ['a negative ttl', -1],
        ['a fractional ttl', 1.5],
        ['a NaN ttl', Number.NaN],
        ['an infinite ttl', Number.POSITIVE_INFINITY],
        ['a string ttl', '1000'],
        ['a ttl whose expiry passes the largest safe integer', Number.MAX_SAFE_INTEGER],
      ];
      for (const [callName, call] of calls) {
        const cases = [...badArguments];
        if (callName !== 'releaseMany') {
          for (const [what, ttl] of badTtls) {
            cases.push([what, (good) => ({ ...good, ttl }), ErrorCode.INVALID_ARGUMENT]);
          }
        }
        for (const [what, spoil, code] of cases) {
          it(`${callName} with ${what} is ${code} and writes nothing`, async () => {
            const [held, free] = ids('bad', 2) as [string, string];
            await store.acquireMany('node-a', [held], ttlMs);
            const before = await store.get(held);
            await clock.advance(10);
            const args = spoil({ owner: 'node-a', batch: [held, free], ttl: ttlMs });
            expect(await codeOf(call(store, args))).toBe(code);
            expect(await store.get(held)).toEqual(before);
            expect(await store.get(free)).toBeUndefined();
          });
        }
      }

      it('get with a bad id is a typed error', async () => {
        expect(await codeOf(store.get(''))).toBe(ErrorCode.INVALID_ENVELOPE);
        expect(await codeOf(store.get(7 as unknown as string))).toBe(ErrorCode.INVALID_ENVELOPE);
        expect(await codeOf(store.get('x'.repeat(Limits.executionIdLengthMax + 1)))).toBe(
          ErrorCode.LIMIT_EXCEEDED,
        );
      });

      it('a closed store refuses every call with STORE_CLOSED; other handles carry on', async () => {
        const peer = await harness.openPeer();
        const id = freshId('closed');
        await peer.close();
        await peer.close();
        expect(await codeOf(peer.acquireMany('node-a', [id], ttlMs))).toBe(ErrorCode.STORE_CLOSED);
        expect(await codeOf(peer.acquireMany('node-a', [], ttlMs))).toBe(ErrorCode.STORE_CLOSED);
        expect(await codeOf(peer.renewMany('node-a', [id], ttlMs))).toBe(ErrorCode.STORE_CLOSED);
        expect(await codeOf(peer.releaseMany('node-a', [id]))).toBe(ErrorCode.STORE_CLOSED);
        expect(await codeOf(peer.get(id))).toBe(ErrorCode.STORE_CLOSED);
        expect(await store.acquireMany('node-a', [id], ttlMs)).toEqual(new Set([id]));
      });
    });

    describe('node claims', () => {
      it('a claimed node reads as live from every handle until it is released', async () => {
        const peer = await harness.openPeer();
        const [node, never] = [freshId('node'), freshId('never')];
        const countBefore = await peer.countLiveNodes();
        const claim = await store.claimNode(node);
        expect(claim?.nodeId).toBe(node);
        expect(await store.liveNodes([node, never])).toEqual(new Set([node]));
        expect(await peer.liveNodes([never, node, node])).toEqual(new Set([node]));
        expect(await peer.countLiveNodes()).toBe(countBefore + 1);
        await claim?.release();
        await claim?.release();
        expect(await peer.liveNodes([node])).toEqual(new Set());
        expect(await store.liveNodes([node])).toEqual(new Set());
        expect(await peer.countLiveNodes()).toBe(countBefore);
        await peer.close();
      });

      it('a live id cannot be claimed twice, from any handle; once released it can', async () => {
        const peer = await harness.openPeer();
        const [node, other] = [freshId('twice'), freshId('other')];
        const first = await store.claimNode(node);
        expect(first).toBeDefined();
        expect(await peer.claimNode(node)).toBeUndefined();
        expect(await store.claimNode(node)).toBeUndefined();
        const second = await peer.claimNode(other);
        expect(second?.nodeId).toBe(other);
        expect(await store.liveNodes([node, other])).toEqual(new Set([node, other]));
        await first?.release();
        const again = await peer.claimNode(node);
        expect(again?.nodeId).toBe(node);
        expect(await store.liveNodes([node, other])).toEqual(new Set([node, other]));
        await again?.release();
        await second?.release();
        expect(await store.liveNodes([node, other])).toEqual(new Set());
        await peer.close();
      });

      it('bad node ids and batches are typed errors; a closed store refuses with STORE_CLOSED', async () => {
        expect(await codeOf(store.claimNode(''))).toBe(ErrorCode.INVALID_ARGUMENT);
        expect(await codeOf(store.claimNode('x'.repeat(201)))).toBe(ErrorCode.INVALID_ARGUMENT);
        expect(await codeOf(store.liveNodes('node' as unknown as string[]))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
        expect(await codeOf(store.liveNodes([7 as unknown as string]))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
        const tooMany = Array.from({ length: Limits.leaseBatchMax + 1 }, (_, i) => `n-${i}`);
        expect(await codeOf(store.liveNodes(tooMany))).toBe(ErrorCode.LIMIT_EXCEEDED);
        expect(await store.liveNodes([])).toEqual(new Set());
        const peer = await harness.openPeer();
        await peer.close();
        expect(await codeOf(peer.claimNode('node-a'))).toBe(ErrorCode.STORE_CLOSED);
        expect(await codeOf(peer.liveNodes(['node-a']))).toBe(ErrorCode.STORE_CLOSED);
        expect(await codeOf(peer.countLiveNodes())).toBe(ErrorCode.STORE_CLOSED);
      });
    });

    describe('ill-formed text in owners and ids', () => {
      for (const [what, bad, position] of illFormedTexts) {
        it(`${what} in an owner or an id is refused by every call and writes nothing`, async () => {
          const [held, free] = ids('text', 2) as [string, string];
          await store.acquireMany('node-a', [held], ttlMs);
          const before = await store.get(held);
          await clock.advance(10);
          for (const [, call] of calls) {
            await expectIllFormed(
              call(store, { owner: bad, batch: [held, free], ttl: ttlMs }),
              ErrorCode.INVALID_ARGUMENT,
              'owner',
              position,
            );
            await expectIllFormed(
              call(store, { owner: 'node-a', batch: [held, free, bad], ttl: ttlMs }),
              ErrorCode.INVALID_ENVELOPE,
              'executionId',
              position,
            );
          }
          await expectIllFormed(
            store.get(bad),
            ErrorCode.INVALID_ENVELOPE,
            'executionId',
            position,
          );
          expect(await store.get(held)).toEqual(before);
          expect(await store.get(free)).toBeUndefined();
        });
      }
    });
  });
}
