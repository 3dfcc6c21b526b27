import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EventEnvelope, FindExecutionsOptions, JsonValue, StoredEvent } from '../envelope.js';
import { ErrorCode, type LoomError } from '../errors.js';
import { canAppendBatch, type EventStore } from '../event-store.js';
import { Limits } from '../limits.js';
import {
  type ConformanceSections,
  conformanceSections,
  type EventStoreSection,
  eventStoreSections,
} from './conformance-sections.js';

/** What a backend hands the conformance suite for one test. */
export interface ConformanceHarness {
  /** A fresh, empty, writable store. */
  store: EventStore;
  /** A second, independent handle on the same database (another connection, pool or process). */
  openPeer(): Promise<EventStore>;
  /** Rows actually stored for an execution, counted behind the store's back. */
  countRows(executionId: string): Promise<number>;
  /** Overwrite one stored payload behind the store's back (to prove `verify` catches it). */
  tamper(executionId: string, sequence: number, payloadText: string): Promise<void>;
  /** Release everything (the store, peers, throwaway schemas or files). */
  close(): Promise<void>;
  /**
   * What the global log promises across executions: `commit` (the default: `readAll` and a
   * global subscription follow the store's commit order) or `per-execution` (a store over
   * several databases, like `ShardedEventStore`: each execution's events in sequence order and
   * every event exactly once, the executions interleaved in the store's own documented order).
   */
  crossExecutionOrder?: 'commit' | 'per-execution';
}

/** `events` as `id:sequence` keys, kept in order within each execution and sorted across them. */
function perExecution(events: readonly string[]): string[] {
  const byId = new Map<string, string[]>();
  for (const key of events) {
    const id = key.slice(0, key.lastIndexOf(':'));
    byId.set(id, [...(byId.get(id) ?? []), key]);
  }
  return [...byId.keys()].sort().flatMap((id) => byId.get(id) as string[]);
}

let idCounter = 0;
/** A unique execution id for one test. */
export function freshId(prefix = 'exec'): string {
  idCounter += 1;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${idCounter}`;
}

/**
 * Strings that are not well-formed text for a key or a name: lone UTF-16 surrogates (Postgres and
 * SQLite would store U+FFFD, or change the string) and NUL (Postgres refuses it). Each with the
 * code unit index of the offending unit, which the error must name.
 */
export const illFormedTexts: ReadonlyArray<[what: string, text: string, position: number]> = [
  ['a lone high surrogate', 'x\uD800', 1],
  ['a lone low surrogate', '\uDC00y', 0],
  ['a reversed surrogate pair', 'ab\uDC00\uD800', 2],
  ['a high surrogate before a letter', '\uDBFFz', 0],
  ['a NUL', 'a\u0000b', 1],
];

/** Asserts `promise` rejects with `code` for the field at `path`, naming the code unit index. */
export async function expectIllFormed(
  promise: Promise<unknown>,
  code: string,
  path: string,
  position: number,
): Promise<void> {
  const error = (await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )) as LoomError | undefined;
  expect(error?.code, `${path} was accepted`).toBe(code);
  expect(error?.fields.path).toBe(path);
  expect(error?.fields.position).toBe(position);
  expect(error?.message).toContain(path);
  expect(error?.message).toContain(`code unit ${position}`);
}

function env(executionId: string, sequence: number, payload: JsonValue = { n: sequence }) {
  return { executionId, sequence, type: `test.event.${sequence}`, payload } satisfies EventEnvelope;
}

function range(executionId: string, from: number, count: number): EventEnvelope[] {
  return Array.from({ length: count }, (_, index) => env(executionId, from + index));
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as LoomError).code ?? `untyped: ${String(error)}`;
  }
  return 'resolved';
}

function waitFor(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (check()) return resolve();
      if (Date.now() > deadline) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 5);
    };
    tick();
  });
}

/**
 * `readAll` from `afterPosition` once `done` holds for what it returns, or what it returns at the
 * 5 s deadline. readAll may lag behind a commit (on Postgres it waits out transactions still
 * open anywhere in the cluster), so a test that asserts on its first answer can fail for a
 * reason that is not the store's.
 */
async function readAllEventually(
  store: EventStore,
  done: (events: StoredEvent[]) => boolean,
  afterPosition = 0,
): Promise<StoredEvent[]> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const events = await store.readAll({ afterPosition });
    if (done(events) || Date.now() > deadline) return events;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Runs `append` while a witness subscription follows `executionId` from `sequence`, and resolves
 * once the witness was handed that event. An append wakes every subscription watching the
 * execution at once, and the witness needs as many turns to deliver as any other would: so a
 * subscription that was closed and has not been called by then was not woken at all. No sleep
 * decides it.
 */
async function appendWitnessed(
  store: EventStore,
  executionId: string,
  sequence: number,
  append: () => Promise<unknown>,
): Promise<void> {
  const seen: number[] = [];
  const witness = store.subscribe({ executionId, fromSequence: sequence }, (events) => {
    for (const event of events) seen.push(event.sequence);
  });
  try {
    await append();
    await waitFor(() => seen.includes(sequence), `a witness of ${executionId}:${sequence}`);
  } finally {
    await witness.close();
  }
}

const jsonArbitrary: fc.Arbitrary<JsonValue> = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.constantFrom(-0, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 1e308, 5e-324),
    fc.string({ unit: 'grapheme' }),
    fc.string({ unit: 'binary' }),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(
      fc.string({ unit: 'grapheme' }).filter((key) => key !== '__proto__'),
      tie('value'),
      { maxKeys: 5 },
    ),
  ),
})).value;

/**
 * The one behaviour suite every `EventStore` backend and decorator must pass, unchanged.
 * Call it from a `*.test.ts` with a factory for a fresh harness per test.
 *
 * @example
 * eventStoreConformance('memory', async () => { const store = new InMemoryEventStore(); … });
 */
export function eventStoreConformance(
  name: string,
  open: () => Promise<ConformanceHarness>,
  options: ConformanceSections<EventStoreSection> = {},
): void {
  const { section, suffix } = conformanceSections(
    'EventStore',
    eventStoreSections,
    options.sections,
  );
  describe(`EventStore conformance: ${name}${suffix}`, () => {
    let harness: ConformanceHarness;
    let store: EventStore;

    beforeEach(async () => {
      harness = await open();
      store = harness.store;
    });
    afterEach(async () => {
      await harness.close();
    });

    section('append and read', () => {
      it('stores envelopes in sequence order with positions and a hash chain', async () => {
        const id = freshId();
        const stored = await store.append(range(id, 0, 3));
        expect(stored.map((event) => event.sequence)).toEqual([0, 1, 2]);
        expect(stored[0]?.prevHash).toBeNull();
        expect(stored[1]?.prevHash).toBe(stored[0]?.hash);
        const read = await store.read(id);
        expect(read).toEqual(stored);
        const positions = new Set(read.map((event) => event.position));
        expect(positions.size).toBe(3);
        for (const event of read) expect(event.position).toBeGreaterThan(0);
        expect(read[2]?.type).toBe('test.event.2');
        expect(typeof read[0]?.at).toBe('number');
      });

      it('keeps the at given by the writer', async () => {
        const id = freshId();
        await store.append([{ ...env(id, 0), at: 1_700_000_000_123 }]);
        expect((await store.read(id))[0]?.at).toBe(1_700_000_000_123);
      });

      it('appends continue an execution across calls', async () => {
        const id = freshId();
        await store.append(range(id, 0, 2));
        await store.append(range(id, 2, 2));
        const read = await store.read(id);
        expect(read.map((event) => event.sequence)).toEqual([0, 1, 2, 3]);
        expect(read[2]?.prevHash).toBe(read[1]?.hash);
      });

      it('reads from a sequence with a limit', async () => {
        const id = freshId();
        await store.append(range(id, 0, 10));
        const page = await store.read(id, { fromSequence: 4, limit: 3 });
        expect(page.map((event) => event.sequence)).toEqual([4, 5, 6]);
        expect(await store.read(id, { fromSequence: 10 })).toEqual([]);
        expect(await store.read(freshId('missing'))).toEqual([]);
      });

      it('a mutation of a returned event never changes the log', async () => {
        const id = freshId();
        await store.append([env(id, 0, { list: [1, 2] })]);
        const first = await store.read(id);
        (first[0]!.payload as { list: number[] }).list.push(3);
        expect((await store.read(id))[0]?.payload).toEqual({ list: [1, 2] });
      });

      it('accepts a batch of eventsPerAppendMax and refuses one more', async () => {
        const id = freshId();
        const max = Limits.eventsPerAppendMax;
        expect(await codeOf(store.append(range(id, 0, max + 1)))).toBe(ErrorCode.LIMIT_EXCEEDED);
        expect(await harness.countRows(id)).toBe(0);
        await store.append(range(id, 0, max));
        expect(await harness.countRows(id)).toBe(max);
      });
    });

    section('sequence rules', () => {
      it('a second sequence 0 fails with EXECUTION_ALREADY_STARTED and changes nothing', async () => {
        const id = freshId();
        await store.append([env(id, 0, { original: true })]);
        expect(await codeOf(store.append([env(id, 0, { original: false })]))).toBe(
          ErrorCode.EXECUTION_ALREADY_STARTED,
        );
        expect((await store.read(id))[0]?.payload).toEqual({ original: true });
        expect(await harness.countRows(id)).toBe(1);
      });

      it('a duplicate sequence fails with SEQUENCE_CONFLICT naming expected and actual', async () => {
        const id = freshId();
        await store.append(range(id, 0, 3));
        try {
          await store.append(range(id, 1, 2));
          expect.unreachable('append should have failed');
        } catch (error) {
          const loom = error as LoomError;
          expect(loom.code).toBe(ErrorCode.SEQUENCE_CONFLICT);
          expect(loom.fields.expected).toBe(3);
          expect(loom.fields.actual).toBe(1);
          expect(loom.fields.executionId).toBe(id);
        }
        expect(await harness.countRows(id)).toBe(3);
      });

      it('a gap is refused with SEQUENCE_CONFLICT and nothing is written', async () => {
        const id = freshId();
        await store.append(range(id, 0, 2));
        try {
          await store.append(range(id, 3, 2));
          expect.unreachable('append should have failed');
        } catch (error) {
          expect((error as LoomError).code).toBe(ErrorCode.SEQUENCE_CONFLICT);
          expect((error as LoomError).fields.expected).toBe(2);
          expect((error as LoomError).fields.actual).toBe(3);
        }
        expect(await harness.countRows(id)).toBe(2);
        const missing = freshId('missing');
        expect(await codeOf(store.append([env(missing, 1)]))).toBe(ErrorCode.SEQUENCE_CONFLICT);
        expect(await harness.countRows(missing)).toBe(0);
      });

      it('of concurrent appends at one sequence exactly one wins', async () => {
        const id = freshId();
        await store.append([env(id, 0)]);
        const outcomes = await Promise.all(
          Array.from({ length: 10 }, (_, index) => codeOf(store.append([env(id, 1, { index })]))),
        );
        expect(outcomes.filter((outcome) => outcome === 'resolved')).toHaveLength(1);
        expect(outcomes.filter((outcome) => outcome === ErrorCode.SEQUENCE_CONFLICT)).toHaveLength(
          9,
        );
        expect(await harness.countRows(id)).toBe(2);
        expect((await store.verify(id)).ok).toBe(true);
      });

      it('of concurrent starts of one id exactly one wins', async () => {
        const id = freshId();
        const outcomes = await Promise.all(
          Array.from({ length: 10 }, () => codeOf(store.append(range(id, 0, 2)))),
        );
        expect(outcomes.filter((outcome) => outcome === 'resolved')).toHaveLength(1);
        expect(
          outcomes.filter((outcome) => outcome === ErrorCode.EXECUTION_ALREADY_STARTED),
        ).toHaveLength(9);
        expect(await harness.countRows(id)).toBe(2);
      });

      it('two independent handles racing one sequence: exactly one wins', async () => {
        const peer = await harness.openPeer();
        try {
          for (let round = 0; round < 5; round++) {
            const id = freshId('race');
            await store.append([env(id, 0)]);
            const outcomes = await Promise.all([
              codeOf(store.append(range(id, 1, 3))),
              codeOf(peer.append(range(id, 1, 2))),
            ]);
            expect(outcomes.filter((outcome) => outcome === 'resolved')).toHaveLength(1);
            expect(outcomes).toContain(ErrorCode.SEQUENCE_CONFLICT);
            const rows = await harness.countRows(id);
            expect(rows === 4 || rows === 3).toBe(true);
            expect((await peer.verify(id)).ok).toBe(true);
          }
        } finally {
          await peer.close();
        }
      });

      it('an append with one bad envelope writes none of them', async () => {
        const id = freshId();
        await store.append([env(id, 0)]);
        const batch: EventEnvelope[] = range(id, 1, 3);
        (batch[2] as { payload: unknown }).payload = { bad: () => 1 };
        expect(await codeOf(store.append(batch))).toBe(ErrorCode.PAYLOAD_NOT_JSON);
        expect(await harness.countRows(id)).toBe(1);
        await store.append(range(id, 1, 3));
        expect(await harness.countRows(id)).toBe(4);
      });
    });

    section('fences', () => {
      it('starts at epoch 0 and advances by one', async () => {
        const id = freshId();
        expect(await store.fences.current(id)).toBe(0);
        expect(await store.fences.advance(id)).toBe(1);
        expect(await store.fences.advance(id)).toBe(2);
        expect(await store.fences.current(id)).toBe(2);
      });

      it('a stale fence cannot append after takeover, and writes nothing', async () => {
        const id = freshId();
        await store.append([env(id, 0)], { fenceEpoch: 0 });
        const epoch = await store.fences.advance(id);
        try {
          await store.append([env(id, 1)], { fenceEpoch: 0 });
          expect.unreachable('stale append should have failed');
        } catch (error) {
          expect((error as LoomError).code).toBe(ErrorCode.FENCE_STALE);
          expect((error as LoomError).fields.expected).toBe(epoch);
          expect((error as LoomError).fields.actual).toBe(0);
        }
        expect(await harness.countRows(id)).toBe(1);
        await store.append([env(id, 1)], { fenceEpoch: epoch });
        expect(await harness.countRows(id)).toBe(2);
      });

      it('an epoch from the future is refused too', async () => {
        const id = freshId();
        expect(await codeOf(store.append([env(id, 0)], { fenceEpoch: 3 }))).toBe(
          ErrorCode.FENCE_STALE,
        );
        expect(await harness.countRows(id)).toBe(0);
      });

      it('concurrent advances hand out distinct epochs', async () => {
        const id = freshId();
        const peer = await harness.openPeer();
        try {
          const epochs = await Promise.all(
            Array.from({ length: 10 }, (_, index) =>
              (index % 2 === 0 ? store : peer).fences.advance(id),
            ),
          );
          expect([...epochs].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        } finally {
          await peer.close();
        }
      });

      it('a takeover on another handle fences the first writer', async () => {
        const id = freshId();
        const peer = await harness.openPeer();
        try {
          await store.append([env(id, 0)], { fenceEpoch: 0 });
          const epoch = await peer.fences.advance(id);
          expect(await codeOf(store.append([env(id, 1)], { fenceEpoch: 0 }))).toBe(
            ErrorCode.FENCE_STALE,
          );
          await peer.append([env(id, 1)], { fenceEpoch: epoch });
          expect(await harness.countRows(id)).toBe(2);
        } finally {
          await peer.close();
        }
      });
    });

    section('readAll', () => {
      it('returns every execution in commit order and pages without loss', async () => {
        const ids = [freshId('a'), freshId('b'), freshId('c')];
        const expected: string[] = [];
        for (let round = 0; round < 4; round++) {
          for (const id of ids) {
            await store.append([env(id, round)]);
            expected.push(`${id}:${round}`);
          }
        }
        // readAll may lag behind a commit (on Postgres it waits out transactions still open
        // anywhere in the cluster), but it never skips or reorders: poll until all are there.
        const mine = (events: StoredEvent[]) =>
          events.filter((event) => ids.includes(event.executionId));
        const all = mine(
          await readAllEventually(store, (events) => mine(events).length >= expected.length),
        );
        const keys = all.map((event) => `${event.executionId}:${event.sequence}`);
        if (harness.crossExecutionOrder === 'per-execution') {
          expect(perExecution(keys)).toEqual(perExecution(expected));
        } else {
          expect(keys).toEqual(expected);
        }
        const paged: StoredEvent[] = [];
        let after = 0;
        for (;;) {
          const page = await store.readAll({ afterPosition: after, limit: 5 });
          if (page.length === 0) break;
          paged.push(...page);
          after = (page[page.length - 1] as StoredEvent).position;
        }
        expect(mine(paged)).toEqual(all);
      });
    });

    section('execution index', () => {
      it('records status with the append that changes it, and finds by status', async () => {
        const running = freshId('idx-run');
        const suspended = freshId('idx-sus');
        const settled = freshId('idx-set');
        await store.append([{ ...env(running, 0), at: 1_000 }], { status: 'running' });
        await store.append([{ ...env(running, 1), at: 2_000 }]);
        await store.append([env(suspended, 0)], { status: 'running' });
        await store.append([env(suspended, 1)], { status: 'suspended', wakeAtMs: 5_000 });
        await store.append([env(settled, 0), env(settled, 1)], { status: 'settled' });
        const found = await store.findExecutions({ status: 'running' });
        const mine = found.find((summary) => summary.executionId === running);
        expect(mine).toEqual({
          executionId: running,
          status: 'running',
          settledAs: null,
          flow: null,
          version: null,
          startedBy: null,
          wakeAtMs: null,
          createdAtMs: 1_000,
          updatedAtMs: 1_000,
          lastEventAt: 2_000,
          nextSequence: 2,
        });
        expect(found.map((summary) => summary.executionId)).not.toContain(suspended);
        const due = await store.findExecutions({ status: 'suspended', dueAtOrBeforeMs: 5_000 });
        expect(due.map((summary) => summary.executionId)).toContain(suspended);
        expect(due.find((summary) => summary.executionId === suspended)?.wakeAtMs).toBe(5_000);
        const early = await store.findExecutions({ status: 'suspended', dueAtOrBeforeMs: 4_999 });
        expect(early.map((summary) => summary.executionId)).not.toContain(suspended);
        const done = await store.findExecutions({ status: 'settled' });
        expect(done.map((summary) => summary.executionId)).toContain(settled);
      });

      it('records what a suspension waits for in the same append, and forgets it on the next status', async () => {
        const signal = freshId('idx-wait-signal');
        const unsaid = freshId('idx-wait-unsaid');
        await store.append([env(signal, 0)], { status: 'running' });
        await store.append([env(signal, 1)], {
          status: 'suspended',
          wakeAtMs: 9_000,
          waitingFor: ['signal', 'timer', 'signal'],
        });
        await store.append([env(unsaid, 0)], { status: 'running' });
        await store.append([env(unsaid, 1)], { status: 'suspended' });
        const waiting = async (id: string) =>
          (await store.findExecutions({ status: 'suspended' })).find(
            (summary) => summary.executionId === id,
          );
        // Each kind once, in waitKinds order, whatever order the writer gave.
        expect((await waiting(signal))?.waitingFor).toEqual(['timer', 'signal']);
        expect(await waiting(unsaid)).not.toHaveProperty('waitingFor');
        await store.append([env(signal, 2)], { status: 'running' });
        await store.append([env(signal, 3)], { status: 'suspended', waitingFor: ['approval'] });
        expect((await waiting(signal))?.waitingFor).toEqual(['approval']);
        await store.append([env(signal, 4)], { status: 'settled' });
        const settled = (await store.findExecutions({ status: 'settled' })).find(
          (summary) => summary.executionId === signal,
        );
        expect(settled).toBeDefined();
        expect(settled).not.toHaveProperty('waitingFor');
        if (!canAppendBatch(store)) return;
        // The group-committed path records it the same way.
        const batched = freshId('idx-wait-batch');
        await store.append([env(batched, 0)], { status: 'running' });
        const outcomes = await store.appendBatch([
          {
            envelopes: [env(batched, 1)],
            guard: { status: 'suspended', waitingFor: ['question', 'child'] },
          },
        ]);
        expect(outcomes[0]?.ok).toBe(true);
        expect((await waiting(batched))?.waitingFor).toEqual(['question', 'child']);
      });

      it('pages by execution id', async () => {
        const prefix = freshId('page');
        for (let index = 0; index < 7; index++) {
          await store.append([env(`${prefix}-${index}`, 0)], { status: 'running' });
        }
        const seen: string[] = [];
        let after = '';
        for (;;) {
          const page = await store.findExecutions({
            status: 'running',
            afterExecutionId: after,
            limit: 3,
          });
          if (page.length === 0) break;
          seen.push(...page.map((summary) => summary.executionId));
          after = page[page.length - 1]?.executionId as string;
        }
        expect(seen.filter((id) => id.startsWith(prefix))).toHaveLength(7);
        expect([...seen].sort()).toEqual(seen);
      });

      it('a refused append leaves the index untouched', async () => {
        const id = freshId('idx-atomic');
        await store.append([env(id, 0)], { status: 'running' });
        await store.fences.advance(id);
        expect(await codeOf(store.append([env(id, 1)], { fenceEpoch: 0, status: 'settled' }))).toBe(
          ErrorCode.FENCE_STALE,
        );
        expect(await codeOf(store.append([env(id, 5)], { status: 'settled' }))).toBe(
          ErrorCode.SEQUENCE_CONFLICT,
        );
        const settled = await store.findExecutions({ status: 'settled' });
        expect(settled.map((summary) => summary.executionId)).not.toContain(id);
      });

      it('bad status arguments are typed errors and write nothing', async () => {
        const id = freshId('idx-bad');
        const bad = [
          { status: 'done' },
          { wakeAtMs: 5 },
          { status: 'running', wakeAtMs: 5 },
          { status: 'suspended', wakeAtMs: -1 },
          { waitingFor: ['timer'] },
          { status: 'running', waitingFor: ['signal'] },
          { status: 'suspended', waitingFor: ['sleep'] },
          { status: 'suspended', waitingFor: 'timer' },
        ];
        for (const guard of bad) {
          expect(await codeOf(store.append([env(id, 0)], guard as never))).toBe(
            ErrorCode.INVALID_ENVELOPE,
          );
        }
        expect(await harness.countRows(id)).toBe(0);
        expect(await codeOf(store.findExecutions({ status: 'nope' as never }))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
      });
    });

    section('finding executions', () => {
      /** Appends a runtime-shaped log: started at `createdAtMs`, then how it stands at `atMs`. */
      async function execution(
        id: string,
        flow: string,
        version: string | null,
        createdAtMs: number,
        end?: { type: string; atMs: number } | { suspendedUntilMs: number; atMs: number },
      ): Promise<void> {
        await store.append([
          {
            executionId: id,
            sequence: 0,
            type: 'execution.started',
            payload: { flow, version, input: null },
            at: createdAtMs,
          },
        ]);
        if (end === undefined) return;
        if ('type' in end) {
          await store.append(
            [
              { executionId: id, sequence: 1, type: 'step.started', payload: {}, at: end.atMs },
              { executionId: id, sequence: 2, type: end.type, payload: {}, at: end.atMs },
            ],
            { status: 'settled' },
          );
        } else {
          await store.append(
            [
              {
                executionId: id,
                sequence: 1,
                type: 'execution.suspended',
                payload: {},
                at: end.atMs,
              },
            ],
            { status: 'suspended', wakeAtMs: end.suspendedUntilMs },
          );
        }
      }

      const ids = (summaries: { executionId: string }[]) =>
        summaries.map((summary) => summary.executionId);

      it('filters by flow, version and how an execution settled, with every field filled', async () => {
        const flow = freshId('flow');
        const other = freshId('other');
        const [completed, failed, cancelled, continued, running, suspended, elsewhere] = [
          'a-completed',
          'b-failed',
          'c-cancelled',
          'd-continued',
          'e-running',
          'f-suspended',
          'g-elsewhere',
        ].map((suffix) => `${flow}-${suffix}`) as [
          string,
          string,
          string,
          string,
          string,
          string,
          string,
        ];
        await execution(completed, flow, '1', 1_000, { type: 'execution.completed', atMs: 5_000 });
        await execution(failed, flow, '2', 1_100, { type: 'execution.failed', atMs: 5_100 });
        await execution(cancelled, flow, null, 1_200, { type: 'execution.cancelled', atMs: 5_200 });
        await execution(continued, flow, '1', 1_300, {
          type: 'execution.continued_as_new',
          atMs: 5_300,
        });
        await execution(running, flow, '1', 1_400);
        await execution(suspended, flow, '1', 1_500, { suspendedUntilMs: 9_000, atMs: 5_500 });
        await execution(elsewhere, other, '1', 1_600, { type: 'execution.completed', atMs: 5_600 });

        expect(ids(await store.findExecutions({ flow }))).toEqual([
          completed,
          failed,
          cancelled,
          continued,
          running,
          suspended,
        ]);
        expect(ids(await store.findExecutions({ flow, version: '1' }))).toEqual([
          completed,
          continued,
          running,
          suspended,
        ]);
        expect(ids(await store.findExecutions({ flow, version: null }))).toEqual([cancelled]);
        expect(ids(await store.findExecutions({ flow, status: 'completed' }))).toEqual([completed]);
        expect(ids(await store.findExecutions({ flow, status: 'failed' }))).toEqual([failed]);
        expect(ids(await store.findExecutions({ flow, status: 'cancelled' }))).toEqual([cancelled]);
        expect(ids(await store.findExecutions({ flow, status: 'continued' }))).toEqual([continued]);
        expect(ids(await store.findExecutions({ flow, status: 'settled' }))).toEqual([
          completed,
          failed,
          cancelled,
          continued,
        ]);
        expect(ids(await store.findExecutions({ flow, status: 'running' }))).toEqual([running]);
        expect(ids(await store.findExecutions({ flow, status: 'suspended' }))).toEqual([suspended]);
        expect(
          ids(await store.findExecutions({ flow, status: 'suspended', dueAtOrBeforeMs: 8_999 })),
        ).toEqual([]);
        expect(ids(await store.findExecutions({ status: 'completed' }))).toEqual(
          expect.arrayContaining([completed, elsewhere]),
        );
        expect(ids(await store.findExecutions({ status: 'completed' }))).not.toContain(failed);

        const [first] = await store.findExecutions({ flow, status: 'completed' });
        expect(first).toEqual({
          executionId: completed,
          status: 'settled',
          settledAs: 'completed',
          flow,
          version: '1',
          startedBy: null,
          wakeAtMs: null,
          createdAtMs: 1_000,
          updatedAtMs: 5_000,
          lastEventAt: 5_000,
          nextSequence: 3,
        });
        const [waiting] = await store.findExecutions({ flow, status: 'suspended' });
        expect(waiting).toMatchObject({
          status: 'suspended',
          settledAs: null,
          wakeAtMs: 9_000,
          createdAtMs: 1_500,
          updatedAtMs: 5_500,
        });
      });

      it('keeps the node of a lazy start as startedBy through later status changes, null without a text one', async () => {
        const flow = freshId('started-by');
        const started = (id: string, node: unknown): EventEnvelope => ({
          executionId: id,
          sequence: 0,
          type: 'execution.started',
          payload: { flow, version: null, input: null, node } as JsonValue,
          at: 1_000,
        });
        const [lazy, numbered, none] = ['a', 'b', 'c'].map((suffix) => `${flow}-${suffix}`) as [
          string,
          string,
          string,
        ];
        await store.append([started(lazy, 'node-1')]);
        await store.append(
          [{ executionId: lazy, sequence: 1, type: 'execution.suspended', payload: {}, at: 2_000 }],
          { status: 'suspended', wakeAtMs: 3_000 },
        );
        await store.append([started(numbered, 7)]);
        await execution(none, flow, null, 1_000);
        const found = await store.findExecutions({ flow });
        expect(found.map((summary) => [summary.executionId, summary.startedBy])).toEqual([
          [lazy, 'node-1'],
          [numbered, null],
          [none, null],
        ]);
      });

      it('filters by creation and update time, lower bounds inclusive and upper exclusive', async () => {
        const flow = freshId('times');
        const early = `${flow}-1`;
        const middle = `${flow}-2`;
        const late = `${flow}-3`;
        await execution(early, flow, null, 1_000, { type: 'execution.completed', atMs: 9_000 });
        await execution(middle, flow, null, 2_000, { type: 'execution.failed', atMs: 3_000 });
        await execution(late, flow, null, 3_000);
        expect(ids(await store.findExecutions({ flow, createdFromMs: 2_000 }))).toEqual([
          middle,
          late,
        ]);
        expect(ids(await store.findExecutions({ flow, createdBeforeMs: 2_000 }))).toEqual([early]);
        expect(
          ids(await store.findExecutions({ flow, createdFromMs: 1_000, createdBeforeMs: 3_000 })),
        ).toEqual([early, middle]);
        expect(ids(await store.findExecutions({ flow, updatedFromMs: 3_000 }))).toEqual([
          early,
          middle,
          late,
        ]);
        expect(ids(await store.findExecutions({ flow, updatedBeforeMs: 3_000 }))).toEqual([]);
        expect(
          ids(await store.findExecutions({ flow, updatedFromMs: 3_001, status: 'settled' })),
        ).toEqual([early]);
      });

      it('pages through a filtered set with the cursor, losing and repeating nothing', async () => {
        const flow = freshId('paged');
        const all: string[] = [];
        for (let index = 0; index < 7; index++) {
          const id = `${flow}-${index}`;
          all.push(id);
          await execution(id, flow, '1', 1_000 + index, {
            type: index % 2 === 0 ? 'execution.completed' : 'execution.failed',
            atMs: 2_000,
          });
        }
        const seen: string[] = [];
        let after = '';
        for (let pages = 0; pages < 10; pages++) {
          const page = await store.findExecutions({
            flow,
            status: 'completed',
            afterExecutionId: after,
            limit: 2,
          });
          if (page.length === 0) break;
          expect(page.length).toBeLessThanOrEqual(2);
          seen.push(...ids(page));
          after = page[page.length - 1]?.executionId as string;
        }
        expect(seen).toEqual(all.filter((_, index) => index % 2 === 0));
      });

      it('an execution.started at sequence 0 enters the index as running without a guard status', async () => {
        const flow = freshId('unguarded');
        const id = `${flow}-1`;
        await execution(id, flow, 'v9', 4_000);
        expect(await store.findExecutions({ flow })).toEqual([
          {
            executionId: id,
            status: 'running',
            settledAs: null,
            flow,
            version: 'v9',
            startedBy: null,
            wakeAtMs: null,
            createdAtMs: 4_000,
            updatedAtMs: 4_000,
            lastEventAt: 4_000,
            nextSequence: 1,
          },
        ]);
        // Later status changes keep what sequence 0 said.
        await store.append([{ ...env(id, 1), type: 'execution.cancelled', at: 4_500 }], {
          status: 'settled',
        });
        expect(await store.findExecutions({ flow })).toMatchObject([
          { flow, version: 'v9', createdAtMs: 4_000, updatedAtMs: 4_500, settledAs: 'cancelled' },
        ]);
        // A settle whose batch has no terminal event the kernel knows is settled, but not as what.
        const plain = freshId('plain-settle');
        await store.append([env(plain, 0)], { status: 'running' });
        await store.append([env(plain, 1)], { status: 'settled' });
        const settled = await store.findExecutions({ status: 'settled' });
        expect(settled.find((summary) => summary.executionId === plain)).toMatchObject({
          settledAs: null,
          flow: null,
        });
        expect(ids(await store.findExecutions({ status: 'completed' }))).not.toContain(plain);
      });

      it('bad filters are INVALID_ARGUMENT', async () => {
        const bad: unknown[] = [
          { status: 'done' },
          { flow: '' },
          { flow: 5 },
          { version: 5 },
          { createdFromMs: -1 },
          { createdBeforeMs: 1.5 },
          { updatedFromMs: 'now' },
          { updatedBeforeMs: Number.NaN },
          { afterExecutionId: 3 },
          { limit: 0 },
        ];
        for (const options of bad) {
          expect(
            await codeOf(store.findExecutions(options as never)),
            JSON.stringify(options),
          ).toBe(ErrorCode.INVALID_ARGUMENT);
        }
      });
    });

    section('signals and due executions', () => {
      it('keeps signals in arrival order and delivers an idempotency key once', async () => {
        const id = freshId('sig');
        await store.append([env(id, 0)], { status: 'running' });
        expect(
          await store.sendSignal({ executionId: id, name: 'approve', payload: { by: 'ada' } }),
        ).toEqual({
          signalId: 1,
          duplicate: false,
        });
        expect(
          await store.sendSignal({
            executionId: id,
            name: 'note',
            payload: -0,
            idempotencyKey: 'k1',
          }),
        ).toEqual({ signalId: 2, duplicate: false });
        expect(
          await store.sendSignal({
            executionId: id,
            name: 'note',
            payload: 'again',
            idempotencyKey: 'k1',
          }),
        ).toEqual({ signalId: 2, duplicate: true });
        const inbox = await store.readSignals(id);
        expect(
          inbox.map((signal) => [signal.signalId, signal.name, signal.idempotencyKey]),
        ).toEqual([
          [1, 'approve', null],
          [2, 'note', 'k1'],
        ]);
        expect(inbox[0]?.payload).toEqual({ by: 'ada' });
        expect(Object.is(inbox[1]?.payload, -0)).toBe(true);
        expect(
          (await store.readSignals(id, { afterSignalId: 1 })).map((signal) => signal.signalId),
        ).toEqual([2]);
      });

      it('a signal sent again with its idempotency key after the target settled is the duplicate it is, not EXECUTION_SETTLED', async () => {
        // A step that sent a signal and died before its record runs again and sends it again
        // with the same key: by then the receiver may have consumed it and ended.
        const id = freshId('sig-settled-dup');
        await store.append([env(id, 0)], { status: 'running' });
        const first = await store.sendSignal({
          executionId: id,
          name: 'go',
          payload: 1,
          idempotencyKey: 'once',
        });
        await store.append([env(id, 1)], { status: 'settled' });
        expect(
          await store.sendSignal({
            executionId: id,
            name: 'go',
            payload: 1,
            idempotencyKey: 'once',
          }),
        ).toEqual({ signalId: first.signalId, duplicate: true });
        expect(
          await codeOf(
            store.sendSignal({ executionId: id, name: 'go', payload: 1, idempotencyKey: 'other' }),
          ),
        ).toBe(ErrorCode.EXECUTION_SETTLED);
        expect(await store.readSignals(id)).toHaveLength(1);
      });

      it('refuses signals to unknown or settled executions, and bad signals, writing nothing', async () => {
        const missing = freshId('sig-missing');
        expect(
          await codeOf(store.sendSignal({ executionId: missing, name: 'x', payload: null })),
        ).toBe(ErrorCode.EXECUTION_NOT_FOUND);
        const done = freshId('sig-done');
        await store.append([env(done, 0), env(done, 1)], { status: 'settled' });
        expect(
          await codeOf(store.sendSignal({ executionId: done, name: 'x', payload: null })),
        ).toBe(ErrorCode.EXECUTION_SETTLED);
        const id = freshId('sig-bad');
        await store.append([env(id, 0)], { status: 'running' });
        const bad: unknown[] = [
          { executionId: id, name: '', payload: null },
          { executionId: id, name: 'x', payload: () => 1 },
          { executionId: id, name: 'x' },
          { executionId: id, name: 'x', payload: null, extra: true },
          { executionId: id, name: 'x'.repeat(Limits.signalNameLengthMax + 1), payload: null },
          { executionId: id, name: 'x', payload: null, idempotencyKey: '' },
        ];
        const codes = [];
        for (const signal of bad) codes.push(await codeOf(store.sendSignal(signal as never)));
        expect(codes).toEqual([
          ErrorCode.INVALID_ENVELOPE,
          ErrorCode.PAYLOAD_NOT_JSON,
          ErrorCode.INVALID_ENVELOPE,
          ErrorCode.INVALID_ENVELOPE,
          ErrorCode.LIMIT_EXCEEDED,
          ErrorCode.INVALID_ENVELOPE,
        ]);
        expect(await store.readSignals(id)).toEqual([]);
      });

      it('claims due suspended executions once, and a signal makes a suspended one due', async () => {
        const early = freshId('due-early');
        const late = freshId('due-late');
        const waiting = freshId('due-signal');
        await store.append([env(early, 0)], { status: 'suspended', wakeAtMs: 1_000 });
        await store.append([env(late, 0)], { status: 'suspended', wakeAtMs: 9_000_000_000_000 });
        await store.append([env(waiting, 0)], { status: 'suspended' });
        const peer = await harness.openPeer();
        try {
          const [a, b] = await Promise.all([store.claimDue(5_000, 100), peer.claimDue(5_000, 100)]);
          const claimed = [...a, ...b];
          expect(claimed.filter((id) => id === early)).toHaveLength(1);
          expect(claimed).not.toContain(late);
          expect(claimed).not.toContain(waiting);
          const running = await store.findExecutions({ status: 'running' });
          expect(running.map((summary) => summary.executionId)).toContain(early);
          await store.sendSignal({ executionId: waiting, name: 'go', payload: null });
          const now = Date.now() + 60_000;
          const woken = [...(await store.claimDue(now, 100)), ...(await peer.claimDue(now, 100))];
          expect(woken.filter((id) => id === waiting)).toHaveLength(1);
        } finally {
          await peer.close();
        }
      });

      it('unclaimDue gives a claimed execution back, due at nowMs, to be claimed once more; others are left as they are', async () => {
        const claimed = freshId('unclaim-claimed');
        const settled = freshId('unclaim-settled');
        const later = freshId('unclaim-later');
        const missing = freshId('unclaim-missing');
        await store.append([env(claimed, 0)], { status: 'suspended', wakeAtMs: 1_000 });
        await store.append([env(settled, 0), env(settled, 1)], { status: 'settled' });
        await store.append([env(later, 0)], { status: 'suspended', wakeAtMs: 9_000_000_000_000 });
        expect(await store.claimDue(5_000, 100)).toContain(claimed);
        expect(await store.unclaimDue([], 6_000)).toEqual([]);
        expect(await store.unclaimDue([claimed, settled, later, missing, claimed], 6_000)).toEqual([
          claimed,
        ]);
        const ids = [claimed, settled, later, missing];
        const rows = async (options: FindExecutionsOptions) =>
          (await store.findExecutions(options))
            .map((row) => row.executionId)
            .filter((id) => ids.includes(id));
        expect(await rows({ status: 'suspended', dueAtOrBeforeMs: 5_999 })).toEqual([]);
        expect(await rows({ status: 'suspended', dueAtOrBeforeMs: 6_000 })).toEqual([claimed]);
        expect(await rows({ status: 'settled' })).toEqual([settled]);
        expect(await rows({ status: 'running' })).toEqual([]);
        // Given back once: no longer running, so a second give-back changes nothing.
        expect(await store.unclaimDue([claimed], 7_000)).toEqual([]);
        const peer = await harness.openPeer();
        try {
          const [a, b] = await Promise.all([store.claimDue(6_000, 100), peer.claimDue(6_000, 100)]);
          expect([...a, ...b].filter((id) => ids.includes(id))).toEqual([claimed]);
        } finally {
          await peer.close();
        }
      });

      it('unclaimDue refuses bad arguments with typed errors, changing nothing', async () => {
        const id = freshId('unclaim-bad');
        await store.append([env(id, 0)], { status: 'running' });
        const tooMany = Array.from({ length: Limits.readLimitMax + 1 }, () => id);
        const codes = [
          await codeOf(store.unclaimDue(id as never, 1_000)),
          await codeOf(store.unclaimDue(tooMany, 1_000)),
          await codeOf(store.unclaimDue([id], -1)),
          await codeOf(store.unclaimDue([id], 1.5)),
          await codeOf(store.unclaimDue([id, ''], 1_000)),
        ];
        expect(codes).toEqual([
          ErrorCode.INVALID_ARGUMENT,
          ErrorCode.INVALID_ARGUMENT,
          ErrorCode.INVALID_ARGUMENT,
          ErrorCode.INVALID_ARGUMENT,
          ErrorCode.INVALID_ENVELOPE,
        ]);
        const running = await store.findExecutions({ status: 'running' });
        expect(running.map((row) => row.executionId)).toContain(id);
      });

      it('claimDue records options.claimedBy until the next status change; unclaimDue clears it; omitted, none', async () => {
        const kept = freshId('claimed-by-kept');
        const appended = freshId('claimed-by-appended');
        const given = freshId('claimed-by-given-back');
        const anonymous = freshId('claimed-by-none');
        const ids = [kept, appended, given, anonymous];
        for (const id of ids) {
          const wakeAtMs = id === anonymous ? 500 : 1_000;
          await store.append([env(id, 0)], { status: 'suspended', wakeAtMs });
        }
        const claimedBy = async () =>
          Object.fromEntries(
            (await store.findExecutions({ limit: Limits.readLimitMax }))
              .filter((row) => ids.includes(row.executionId))
              .map((row) => [row.executionId, row.claimedBy]),
          );
        expect(await codeOf(store.claimDue(5_000, 100, { claimedBy: '' }))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
        expect(await codeOf(store.claimDue(5_000, 100, { claimedBy: 7 as never }))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
        expect(await claimedBy()).toEqual(Object.fromEntries(ids.map((id) => [id, undefined])));
        expect(await store.claimDue(700, 100)).toContain(anonymous);
        const claimed = await store.claimDue(5_000, 100, { claimedBy: 'node-a' });
        expect(claimed.filter((id) => ids.includes(id)).sort()).toEqual(
          [kept, appended, given].sort(),
        );
        // An append without a status change keeps the mark; one with a status change clears it.
        await store.append([env(kept, 1)]);
        await store.append([env(appended, 1)], { status: 'running' });
        await store.unclaimDue([given], 6_000);
        expect(await claimedBy()).toEqual({
          [kept]: 'node-a',
          [appended]: undefined,
          [given]: undefined,
          [anonymous]: undefined,
        });
        // Claimed again without a claimer: none recorded.
        expect(await store.claimDue(6_000, 100)).toContain(given);
        expect((await claimedBy())[given]).toBeUndefined();
      });
    });

    section('claimDue kept to the flows a node runs (options.flows)', () => {
      /** Sequence 0 of an execution of `flow` (version `version`), suspended due at 1 000. */
      const startedDue = (id: string, flow: string, version: string | null) =>
        store.append(
          [
            {
              executionId: id,
              sequence: 0,
              type: 'execution.started',
              payload: { flow, version, input: null },
            },
          ],
          { status: 'suspended', wakeAtMs: 1_000 },
        );

      it('claims only executions of the named flows and versions (and of flows the index does not know); the rest stay due', async () => {
        const mine = freshId('claim-mine');
        const mineV2 = freshId('claim-mine-v2');
        const unversioned = freshId('claim-plain');
        const theirs = freshId('claim-theirs');
        const unknown = freshId('claim-unknown');
        const ids = [mine, mineV2, unversioned, theirs, unknown];
        await startedDue(mine, 'billing', '1');
        await startedDue(mineV2, 'billing', '2');
        await startedDue(unversioned, 'plain', null);
        await startedDue(theirs, 'render', null);
        // Not started by an execution.started: the index knows no flow for it.
        await store.append([env(unknown, 0)], { status: 'suspended', wakeAtMs: 1_000 });
        const flows = [
          { name: 'billing', version: '1' },
          { name: 'plain', version: null },
        ];
        const claimed = (await store.claimDue(5_000, 100, { flows })).filter((id) =>
          ids.includes(id),
        );
        expect(claimed.sort()).toEqual([mine, unversioned, unknown].sort());
        const due = await store.findExecutions({ status: 'suspended', dueAtOrBeforeMs: 5_000 });
        expect(
          due
            .map((row) => row.executionId)
            .filter((id) => ids.includes(id))
            .sort(),
        ).toEqual([mineV2, theirs].sort());
        // Nothing named: nothing of a known flow is claimed. Unfiltered: the rest.
        expect(
          (await store.claimDue(5_000, 100, { flows: [] })).filter((id) => ids.includes(id)),
        ).toEqual([]);
        const rest = (await store.claimDue(5_000, 100)).filter((id) => ids.includes(id));
        expect(rest.sort()).toEqual([mineV2, theirs].sort());
      });

      it('refuses a malformed or oversized flows filter with INVALID_ARGUMENT', async () => {
        const bad: unknown[] = [
          'billing',
          [{ name: 1, version: null }],
          [{ name: 'billing' }],
          Array.from({ length: Limits.claimFlowsMax + 1 }, (_, i) => ({
            name: `f${i}`,
            version: null,
          })),
        ];
        const codes = [];
        for (const flows of bad)
          codes.push(await codeOf(store.claimDue(5_000, 10, { flows } as never)));
        expect(codes).toEqual(bad.map(() => ErrorCode.INVALID_ARGUMENT));
      });
    });

    section('a suspension guarded by the signals its writer saw (wakeOnSignalsAfter)', () => {
      /** The rows of `ids` due by `atMs`, sorted. */
      const dueOf = async (ids: readonly string[], atMs: number) =>
        (await store.findExecutions({ status: 'suspended', dueAtOrBeforeMs: atMs }))
          .map((row) => row.executionId)
          .filter((id) => ids.includes(id))
          .sort();

      it('is due at once when a signal came after those it saw, and not when it saw them all', async () => {
        const at = 1_700_000_000_000;
        const unseen = freshId('guard-unseen');
        const seen = freshId('guard-seen');
        const timed = freshId('guard-timed');
        const quiet = freshId('guard-quiet');
        const ids = [unseen, seen, timed, quiet];
        for (const id of ids) await store.append([env(id, 0)], { status: 'running' });
        // While they run: `seen` gets one signal its driver reads; the others get theirs after
        // the driver looked (unseen, timed) or none (quiet).
        await store.sendSignal({ executionId: seen, name: 'go', payload: null });
        await store.sendSignal({ executionId: unseen, name: 'go', payload: null });
        await store.sendSignal({ executionId: timed, name: 'go', payload: null });
        // A running execution is never due, signal or not.
        expect(await dueOf(ids, at + 10_000_000_000_000)).toEqual([]);
        const suspend = (id: string, sawUpTo: number, wakeAtMs?: number) =>
          store.append([{ ...env(id, 1), at }], {
            status: 'suspended',
            wakeOnSignalsAfter: sawUpTo,
            ...(wakeAtMs === undefined ? {} : { wakeAtMs }),
          });
        await suspend(unseen, 0);
        await suspend(seen, 1);
        await suspend(timed, 0, at + 3_600_000);
        await suspend(quiet, 0);
        // Due at the suspension's own time (`at`), not later: earlier than the timer of `timed`.
        expect(await dueOf(ids, at)).toEqual([timed, unseen].sort());
        const rows = await store.findExecutions({ status: 'suspended', limit: 1_000 });
        const wakeOf = (id: string) => rows.find((row) => row.executionId === id)?.wakeAtMs;
        expect([wakeOf(unseen), wakeOf(timed), wakeOf(seen), wakeOf(quiet)]).toEqual([
          at,
          at,
          null,
          null,
        ]);
        const claimed = (await store.claimDue(at, 1_000)).filter((id) => ids.includes(id));
        expect(claimed.sort()).toEqual([timed, unseen].sort());
        // A signal after the suspension wakes it as before, guard or not.
        await store.sendSignal({ executionId: quiet, name: 'go', payload: null });
        expect(await dueOf(ids, Date.now() + 60_000)).toEqual([quiet]);
      });

      it('keeps its own wake time when the guard saw every signal; an unguarded one ignores the inbox', async () => {
        const at = 1_700_000_000_000;
        const guarded = freshId('guard-all-seen');
        const plain = freshId('guard-none');
        for (const id of [guarded, plain]) {
          await store.append([env(id, 0)], { status: 'running' });
          await store.sendSignal({ executionId: id, name: 'a', payload: 1 });
          await store.sendSignal({ executionId: id, name: 'b', payload: 2 });
        }
        await store.append([{ ...env(guarded, 1), at }], {
          status: 'suspended',
          wakeAtMs: at + 5_000,
          wakeOnSignalsAfter: 2,
        });
        // A suspension on timers only (no guard): the signals it consumed earlier wake nothing.
        await store.append([{ ...env(plain, 1), at }], {
          status: 'suspended',
          wakeAtMs: at + 5_000,
        });
        expect(await dueOf([guarded, plain], at + 4_999)).toEqual([]);
        expect(await dueOf([guarded, plain], at + 5_000)).toEqual([guarded, plain].sort());
      });

      it('refuses a guard without a suspension, or not a non-negative integer, writing nothing', async () => {
        const id = freshId('guard-bad');
        await store.append([env(id, 0)], { status: 'running' });
        const bad: unknown[] = [
          { status: 'running', wakeOnSignalsAfter: 0 },
          { wakeOnSignalsAfter: 0 },
          { status: 'suspended', wakeOnSignalsAfter: -1 },
          { status: 'suspended', wakeOnSignalsAfter: 1.5 },
          { status: 'suspended', wakeOnSignalsAfter: '1' },
        ];
        const codes = [];
        for (const guard of bad)
          codes.push(await codeOf(store.append([env(id, 1)], guard as never)));
        expect(codes).toEqual(bad.map(() => ErrorCode.INVALID_ENVELOPE));
        expect(await store.read(id)).toHaveLength(1);
      });

      it('a signal sent from another connection at the same moment as the suspension always leaves it due (40 rounds)', async () => {
        const peer = await harness.openPeer();
        try {
          const ids: string[] = [];
          for (let round = 0; round < 40; round++) {
            const id = freshId(`guard-race-${round}`);
            ids.push(id);
            await store.append([env(id, 0)], { status: 'running' });
            // The driver saw no signal; one is sent while its suspension is being written.
            const [, sent] = await Promise.all([
              store.append([env(id, 1)], { status: 'suspended', wakeOnSignalsAfter: 0 }),
              peer.sendSignal({ executionId: id, name: 'go', payload: round }),
            ]);
            expect(sent.signalId).toBe(1);
          }
          // Whichever committed first, the other saw it: every one is due, none suspended for good.
          expect(await dueOf(ids, Date.now() + 60_000)).toEqual([...ids].sort());
        } finally {
          await peer.close();
        }
      });
    });

    section('a settling append that wakes another execution (notify)', () => {
      const inboxOf = async (id: string) =>
        (await store.readSignals(id)).map((signal) => [
          signal.signalId,
          signal.name,
          signal.payload,
        ]);
      const wakeOf = async (id: string) =>
        (await store.findExecutions({ limit: 1_000 })).find((row) => row.executionId === id)
          ?.wakeAtMs;

      it('puts the signal in the target inbox in the write that settles, waking a suspended target', async () => {
        const at = 1_700_000_000_000;
        const parent = freshId('notify-parent');
        const child = freshId('notify-child');
        await store.append([env(parent, 0)], { status: 'running' });
        await store.append([{ ...env(parent, 1), at }], {
          status: 'suspended',
          wakeOnSignalsAfter: 0,
        });
        await store.append([env(child, 0)], { status: 'running' });
        expect(await wakeOf(parent)).toBeNull();
        await store.append([{ ...env(child, 1), at: at + 5 }], {
          status: 'settled',
          notify: { executionId: parent, name: 'child.done', payload: { childId: child } },
        });
        expect(await inboxOf(parent)).toEqual([[1, 'child.done', { childId: child }]]);
        expect(await wakeOf(parent)).not.toBeNull();
        expect(await store.claimDue(Date.now() + 60_000, 1_000)).toContain(parent);
      });

      it('leaves a running target due at its guarded suspension, as a signal does', async () => {
        const parent = freshId('notify-running');
        const child = freshId('notify-child');
        await store.append([env(parent, 0)], { status: 'running' });
        await store.append([env(child, 0)], { status: 'running' });
        await store.append([env(child, 1)], {
          status: 'settled',
          notify: { executionId: parent, name: 'child.done', payload: null },
        });
        // The parent looked at its inbox before the child ended: its guard saw nothing.
        await store.append([env(parent, 1)], { status: 'suspended', wakeOnSignalsAfter: 0 });
        expect(await wakeOf(parent)).not.toBeNull();
      });

      it('skips a missing or settled target; the append still commits', async () => {
        const settled = freshId('notify-settled');
        await store.append([env(settled, 0)], { status: 'running' });
        await store.append([env(settled, 1)], { status: 'settled' });
        for (const target of [settled, freshId('notify-missing')]) {
          const child = freshId('notify-child');
          await store.append([env(child, 0)], { status: 'running' });
          await store.append([env(child, 1)], {
            status: 'settled',
            notify: { executionId: target, name: 'child.done', payload: null },
          });
          expect(await store.read(child)).toHaveLength(2);
        }
        expect(await inboxOf(settled)).toEqual([]);
      });

      it('delivers nothing when the append is refused (fence, sequence)', async () => {
        const parent = freshId('notify-refused');
        const child = freshId('notify-child');
        await store.append([env(parent, 0)], { status: 'running' });
        await store.append([env(child, 0)], { status: 'running' });
        const epoch = await store.fences.advance(child);
        const notify = { executionId: parent, name: 'child.done', payload: null };
        const codes = [
          await codeOf(
            store.append([env(child, 1)], { fenceEpoch: epoch - 1, status: 'settled', notify }),
          ),
          await codeOf(store.append([env(child, 5)], { status: 'settled', notify })),
        ];
        expect(codes).toEqual([ErrorCode.FENCE_STALE, ErrorCode.SEQUENCE_CONFLICT]);
        expect(await inboxOf(parent)).toEqual([]);
      });

      it('is delivered by appendBatch too, beside requests without one', async () => {
        if (!canAppendBatch(store)) return;
        const parent = freshId('notify-batch');
        const child = freshId('notify-child');
        const other = freshId('notify-other');
        await store.append([env(parent, 0)], { status: 'running' });
        await store.append([env(parent, 1)], { status: 'suspended', wakeOnSignalsAfter: 0 });
        await store.append([env(child, 0)], { status: 'running' });
        const outcomes = await store.appendBatch([
          { envelopes: [env(other, 0)] },
          {
            envelopes: [env(child, 1)],
            guard: {
              status: 'settled',
              notify: { executionId: parent, name: 'child.done', payload: 7 },
            },
          },
        ]);
        expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true]);
        expect(await inboxOf(parent)).toEqual([[1, 'child.done', 7]]);
        expect(await wakeOf(parent)).not.toBeNull();
        expect(await store.read(other)).toHaveLength(1);
      });

      it('refuses a notify without a settle, to the execution itself, or not a signal, writing nothing', async () => {
        const id = freshId('notify-bad');
        const target = freshId('notify-target');
        await store.append([env(id, 0)], { status: 'running' });
        await store.append([env(target, 0)], { status: 'running' });
        const signal = { executionId: target, name: 'x', payload: null };
        const bad: unknown[] = [
          { notify: signal },
          { status: 'suspended', notify: signal },
          { status: 'settled', notify: { ...signal, executionId: id } },
          { status: 'settled', notify: { executionId: target, payload: null } },
          { status: 'settled', notify: { ...signal, extra: 1 } },
        ];
        const codes = [];
        for (const guard of bad)
          codes.push(await codeOf(store.append([env(id, 1)], guard as never)));
        expect(codes).toEqual(bad.map(() => ErrorCode.INVALID_ENVELOPE));
        expect(await store.read(id)).toHaveLength(1);
        expect(await inboxOf(target)).toEqual([]);
      });
    });

    section('subscribe', () => {
      it('catches up, then delivers live appends in order', async () => {
        const id = freshId();
        await store.append(range(id, 0, 3));
        const seen: string[] = [];
        const subscription = store.subscribe({}, (events) => {
          for (const event of events) seen.push(`${event.executionId}:${event.sequence}`);
        });
        try {
          await waitFor(() => seen.length === 3, 'catch-up');
          const other = freshId('live');
          await store.append(range(other, 0, 2));
          await store.append(range(id, 3, 1));
          await waitFor(() => seen.length === 6, 'live events');
          const order =
            harness.crossExecutionOrder === 'per-execution' ? perExecution : (x: string[]) => x;
          expect(order(seen)).toEqual(
            order([`${id}:0`, `${id}:1`, `${id}:2`, `${other}:0`, `${other}:1`, `${id}:3`]),
          );
        } finally {
          await subscription.close();
        }
        await appendWitnessed(store, id, 4, () => store.append(range(id, 4, 1)));
        expect(seen).toHaveLength(6);
      });

      it('resumes after a position', async () => {
        const id = freshId();
        const stored = await store.append(range(id, 0, 5));
        const seen: number[] = [];
        const subscription = store.subscribe(
          { afterPosition: (stored[1] as StoredEvent).position },
          (events) => {
            for (const event of events) seen.push(event.sequence);
          },
        );
        try {
          await waitFor(() => seen.length === 3, 'resumed events');
          expect(seen).toEqual([2, 3, 4]);
        } finally {
          await subscription.close();
        }
      });

      it('follows one execution from a sequence', async () => {
        const id = freshId();
        const other = freshId('other');
        await store.append(range(id, 0, 2));
        const seen: string[] = [];
        const subscription = store.subscribe({ executionId: id, fromSequence: 1 }, (events) => {
          for (const event of events) seen.push(`${event.executionId}:${event.sequence}`);
        });
        try {
          await store.append(range(other, 0, 2));
          await store.append(range(id, 2, 2));
          await waitFor(() => seen.length === 3, 'execution events');
          expect(seen).toEqual([`${id}:1`, `${id}:2`, `${id}:3`]);
        } finally {
          await subscription.close();
        }
      });

      it('a failing handler closes the subscription and reports the error', async () => {
        const id = freshId();
        await store.append(range(id, 0, 1));
        let reported: unknown;
        let calls = 0;
        const subscription = store.subscribe({ onError: (error) => (reported = error) }, () => {
          calls += 1;
          throw new Error('handler broke');
        });
        await waitFor(() => reported !== undefined, 'the error report');
        expect((reported as Error).message).toBe('handler broke');
        await appendWitnessed(store, id, 1, () => store.append(range(id, 1, 1)));
        expect(calls).toBe(1);
        await subscription.close();
      });
    });

    section('prune', () => {
      /** Events at a fixed time, so the index says when each execution settled. */
      const at = (executionId: string, sequence: number, atMs: number) => ({
        ...env(executionId, sequence),
        at: atMs,
      });
      /** An execution started and settled at `atMs`, with `count` events. */
      const settledAt = async (executionId: string, atMs: number, count = 2) => {
        await store.append([at(executionId, 0, atMs)], { status: 'running' });
        const rest = Array.from({ length: count - 1 }, (_, index) =>
          at(executionId, index + 1, atMs),
        );
        await store.append(rest, { status: 'settled' });
      };
      const indexed = async (ids: readonly string[]) =>
        (await store.findExecutions({}))
          .map((row) => row.executionId)
          .filter((id) => ids.includes(id))
          .sort();

      it('prune removes settled executions that ended before the time, with their inbox, fence and index row; running, suspended and later ones stay', async () => {
        const old = freshId('prune-old');
        const recent = freshId('prune-recent');
        const running = freshId('prune-running');
        const suspended = freshId('prune-suspended');
        await store.append([at(old, 0, 1_000)], { status: 'running' });
        await store.sendSignal({ executionId: old, name: 'ping', payload: 1, idempotencyKey: 'k' });
        await store.fences.advance(old);
        await store.append([at(old, 1, 1_000), at(old, 2, 1_000)], { status: 'settled' });
        await settledAt(recent, 5_000);
        await store.append([at(running, 0, 1_000)], { status: 'running' });
        await store.append([at(suspended, 0, 1_000)], { status: 'suspended', wakeAtMs: null });
        // Something newer than every execution above (a store may keep the newest event's owner).
        const tip = freshId('prune-tip');
        await store.append([env(tip, 0)], { status: 'running' });
        const oldEvents = await store.read(old);

        const pruned = await store.prune({ endedBeforeMs: 2_000 });

        expect(pruned).toEqual([
          { executionId: old, events: 3, lastHash: (oldEvents[2] as StoredEvent).hash },
        ]);
        expect(await store.read(old)).toEqual([]);
        expect(await store.readSignals(old)).toEqual([]);
        expect(await store.fences.current(old)).toBe(0);
        expect(await store.verify(old)).toMatchObject({ ok: true, events: 0 });
        const all = [old, recent, running, suspended, tip];
        expect(await indexed(all)).toEqual([recent, running, suspended, tip].sort());
        // Until the tip and both of the recent execution's events show: a sharded store reads
        // each shard apart, and one may still hold back a row (a transaction open elsewhere in
        // the cluster) while another already shows the newer tip.
        const logged = await readAllEventually(
          store,
          (events) =>
            events.some((event) => event.executionId === tip) &&
            events.filter((event) => event.executionId === recent).length === 2,
        );
        expect(logged.filter((event) => event.executionId === old)).toEqual([]);
        expect(logged.filter((event) => event.executionId === recent)).toHaveLength(2);
        // Nothing else ended before 2 s; a later time takes the recent one, never the others.
        expect(await store.prune({ endedBeforeMs: 2_000 })).toEqual([]);
        const later = await store.prune({ endedBeforeMs: 5_001 });
        expect(later.map((row) => row.executionId)).toEqual([recent]);
        expect(await indexed(all)).toEqual([running, suspended, tip].sort());
        expect(await store.read(running)).toHaveLength(1);
        expect(await store.read(suspended)).toHaveLength(1);
      });

      it('prune is a bounded batch: at most limit per call, only the executionIds given, the next call takes the rest', async () => {
        const ids = [freshId('prune-batch'), freshId('prune-batch'), freshId('prune-batch')];
        for (const id of ids) await settledAt(id, 1_000);
        const running = freshId('prune-batch-running');
        await store.append([at(running, 0, 1_000)], { status: 'running' });
        const missing = freshId('prune-batch-missing');
        const [first, second, third] = ids as [string, string, string];

        const chosen = await store.prune({
          endedBeforeMs: 2_000,
          executionIds: [second, running, missing, second],
        });
        expect(chosen.map((row) => row.executionId)).toEqual([second]);
        expect(chosen[0]?.events).toBe(2);
        const one = await store.prune({ endedBeforeMs: 2_000, limit: 1 });
        expect(one).toHaveLength(1);
        const rest = await store.prune({ endedBeforeMs: 2_000, limit: 1 });
        expect(rest).toHaveLength(1);
        expect([...one, ...rest].map((row) => row.executionId).sort()).toEqual(
          [first, third].sort(),
        );
        expect(await store.prune({ endedBeforeMs: 2_000 })).toEqual([]);
        expect(await store.prune({ endedBeforeMs: 2_000, executionIds: [] })).toEqual([]);
        expect(await indexed([...ids, running])).toEqual([running]);
      });

      it('two prunes at once, on two handles, remove each execution once and report it once', async () => {
        const ids = Array.from({ length: 6 }, () => freshId('prune-race'));
        for (const id of ids) await settledAt(id, 1_000);
        await store.append([env(freshId('prune-tip'), 0)], { status: 'running' });
        const peer = await harness.openPeer();
        try {
          const [mine, theirs] = await Promise.all([
            store.prune({ endedBeforeMs: 2_000 }),
            peer.prune({ endedBeforeMs: 2_000 }),
          ]);
          const reported = [...mine, ...theirs].map((row) => row.executionId).sort();
          expect(reported).toEqual([...ids].sort());
          expect([...mine, ...theirs].every((row) => row.events === 2)).toBe(true);
        } finally {
          await peer.close();
        }
        expect(await indexed(ids)).toEqual([]);
        for (const id of ids) expect(await store.read(id)).toEqual([]);
      });

      it('a pruned id starts again as a new execution: a chain from null, an empty inbox, fence 0, positions after the old ones', async () => {
        const id = freshId('prune-again');
        await store.append([at(id, 0, 1_000)], { status: 'running' });
        await store.sendSignal({
          executionId: id,
          name: 's',
          payload: null,
          idempotencyKey: 'once',
        });
        await store.fences.advance(id);
        const old = await store.append([at(id, 1, 1_000)], { status: 'settled' });
        await store.append([env(freshId('prune-tip'), 0)]);
        expect(await store.prune({ endedBeforeMs: 2_000 })).toHaveLength(1);

        const again = await store.append([env(id, 0), env(id, 1)], { fenceEpoch: 0 });
        expect(again[0]?.prevHash).toBeNull();
        expect(again[0]?.position).toBeGreaterThan((old[0] as StoredEvent).position);
        expect(await store.verify(id)).toMatchObject({ ok: true, events: 2 });
        expect(
          await store.sendSignal({
            executionId: id,
            name: 's',
            payload: 1,
            idempotencyKey: 'once',
          }),
        ).toEqual({ signalId: 1, duplicate: false });
        expect((await store.read(id)).map((event) => event.payload)).toEqual([{ n: 0 }, { n: 1 }]);
      });

      it('prune refuses bad arguments with typed errors, removing nothing', async () => {
        const id = freshId('prune-bad');
        await settledAt(id, 1_000);
        await store.append([env(freshId('prune-tip'), 0)]);
        const tooMany = Array.from({ length: Limits.readLimitMax + 1 }, () => id);
        const codes = [
          await codeOf(store.prune(undefined as never)),
          await codeOf(store.prune({ endedBeforeMs: -1 })),
          await codeOf(store.prune({ endedBeforeMs: 1.5 })),
          await codeOf(store.prune({ endedBeforeMs: '2000' as never })),
          await codeOf(store.prune({ endedBeforeMs: 2_000, limit: 0 })),
          await codeOf(store.prune({ endedBeforeMs: 2_000, limit: Limits.readLimitMax + 1 })),
          await codeOf(store.prune({ endedBeforeMs: 2_000, executionIds: id as never })),
          await codeOf(store.prune({ endedBeforeMs: 2_000, executionIds: tooMany })),
          await codeOf(store.prune({ endedBeforeMs: 2_000, executionIds: [id, ''] })),
        ];
        expect(codes).toEqual([
          ...Array.from({ length: 8 }, () => ErrorCode.INVALID_ARGUMENT),
          ErrorCode.INVALID_ENVELOPE,
        ]);
        expect(await store.read(id)).toHaveLength(2);
        expect(await indexed([id])).toEqual([id]);
      });
    });

    section('hash chain', () => {
      it('verify accepts an untouched log and finds an edited event', async () => {
        const id = freshId();
        await store.append(range(id, 0, 4));
        const good = await store.verify(id);
        expect(good).toMatchObject({ ok: true, events: 4 });
        await harness.tamper(id, 2, '{"n":999}');
        const bad = await store.verify(id);
        expect(bad).toMatchObject({ ok: false, brokenAtSequence: 2 });
      });

      it('hashes follow the documented formula, whatever the backend', async () => {
        const id = freshId('hash');
        // Non-ASCII too: the hash covers the text's UTF-8 bytes.
        const payloadText = '{"a":[1,"two",null],"u":"é 🧵"}';
        const stored = await store.append([
          {
            executionId: id,
            sequence: 0,
            type: 'fixture',
            payload: JSON.parse(payloadText),
            at: 7,
          },
          { executionId: id, sequence: 1, type: 'fixture', payload: -0, at: 8 },
        ]);
        const first = createHash('sha256')
          .update(`\n${id}\n0\nfixture\n7\n${payloadText}`)
          .digest('hex');
        const second = createHash('sha256')
          .update(`${first}\n${id}\n1\nfixture\n8\n-0`)
          .digest('hex');
        expect(stored.map((event) => event.hash)).toEqual([first, second]);
        expect((await store.read(id)).map((event) => event.hash)).toEqual([first, second]);
      });

      it('the formula holds for a payload past the hash’s scratch buffer, and one byte edited breaks it', async () => {
        const id = freshId('hash-large');
        // 1,500 short strings (10,501 UTF-16 units, 16,501 UTF-8 bytes): hashed from one string,
        // not the scratch buffer (ADR 0054); each element under a content decorator's threshold.
        const large = Array.from({ length: 1_500 }, () => 'éééé');
        const stored = await store.append([
          { executionId: id, sequence: 0, type: 'fixture', payload: large, at: 1_700_000_000_123 },
          {
            executionId: id,
            sequence: 1,
            type: 'fixture',
            payload: 'small',
            at: 1_700_000_000_124,
          },
        ]);
        const first = createHash('sha256')
          .update(`\n${id}\n0\nfixture\n1700000000123\n${JSON.stringify(large)}`)
          .digest('hex');
        const second = createHash('sha256')
          .update(`${first}\n${id}\n1\nfixture\n1700000000124\n"small"`)
          .digest('hex');
        expect(stored.map((event) => event.hash)).toEqual([first, second]);
        expect(await store.verify(id)).toMatchObject({ ok: true, events: 2, lastHash: second });
        await harness.tamper(id, 1, '"smalm"');
        expect(await store.verify(id)).toMatchObject({ ok: false, brokenAtSequence: 1 });
      });
    });

    section('round-trip fidelity', () => {
      it('edge cases come back exactly', async () => {
        let nested: JsonValue = 'bottom';
        for (let depth = 0; depth < 200; depth++) nested = { d: [nested] };
        const cases: JsonValue[] = [
          -0,
          0,
          [-0, { z: -0 }],
          '',
          'ünïcødé 🧵 \u0000 \u2028 \ud83d\ude00',
          { '': 'empty key', 'key with "quotes"': true },
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
          { b: 1, a: 2 },
        ];
        const id = freshId();
        await store.append(cases.map((payload, sequence) => env(id, sequence, payload)));
        const read = await store.read(id);
        read.forEach((event, index) => {
          expect(event.payload).toEqual(cases[index]);
          expect(Object.is(event.payload, -0)).toBe(Object.is(cases[index], -0));
        });
        expect(Object.keys(read[16]?.payload as object)).toEqual(['b', 'a']);
      });

      it('any JSON value round-trips (property)', async () => {
        await fc.assert(
          fc.asyncProperty(jsonArbitrary, async (payload) => {
            const id = freshId('prop');
            await store.append([env(id, 0, payload)]);
            const [event] = await store.read(id);
            expect(event?.payload).toEqual(payload);
          }),
          { numRuns: 60 },
        );
      });
    });

    section('bad input', () => {
      const badPayloads: Array<[string, () => unknown]> = [
        ['a function', () => ({ f: () => 1 })],
        ['undefined', () => ({ u: undefined })],
        ['top-level undefined', () => undefined],
        ['a BigInt', () => ({ big: 10n })],
        ['NaN', () => [Number.NaN]],
        ['Infinity', () => ({ i: Number.POSITIVE_INFINITY })],
        ['a Date', () => ({ when: new Date(0) })],
        ['a Map', () => new Map()],
        // biome-ignore lint/suspicious/noSparseArray: the hole is the bad input under test
        ['a sparse array', () => [1, , 3]],
        ['a symbol', () => ({ s: Symbol('x') })],
        [
          'a cycle',
          () => {
            const cyclic: Record<string, unknown> = { a: 1 };
            cyclic.self = cyclic;
            return cyclic;
          },
        ],
      ];
      for (const [what, make] of badPayloads) {
        it(`a payload with ${what} is PAYLOAD_NOT_JSON and writes nothing`, async () => {
          const id = freshId();
          const error = await store
            .append([{ executionId: id, sequence: 0, type: 't', payload: make() as JsonValue }])
            .then(
              () => undefined,
              (caught: LoomError) => caught,
            );
          expect(error?.code).toBe(ErrorCode.PAYLOAD_NOT_JSON);
          expect(error?.message).toMatch(/payload at \$/);
          expect(await harness.countRows(id)).toBe(0);
          await store.append([env(id, 0)]);
          expect(await harness.countRows(id)).toBe(1);
        });
      }

      it('a payload nested past payloadDepthMax is LIMIT_EXCEEDED', async () => {
        let deep: JsonValue = 1;
        for (let depth = 0; depth < Limits.payloadDepthMax + 1; depth++) deep = [deep];
        const id = freshId();
        expect(await codeOf(store.append([env(id, 0, deep)]))).toBe(ErrorCode.LIMIT_EXCEEDED);
        expect(await harness.countRows(id)).toBe(0);
      });

      it('a payload over payloadBytesMax is LIMIT_EXCEEDED', async () => {
        const id = freshId();
        const big = 'é'.repeat(Limits.payloadBytesMax / 2);
        const error = await store.append([env(id, 0, big)]).catch((caught: LoomError) => caught);
        expect((error as LoomError).code).toBe(ErrorCode.LIMIT_EXCEEDED);
        expect((error as LoomError).fields.limit).toBe('payloadBytesMax');
        expect(await harness.countRows(id)).toBe(0);
      });

      it('limits trigger exactly at their threshold: payloadBytesMax and payloadDepthMax bytes and levels are stored, one more is LIMIT_EXCEEDED', async () => {
        const id = freshId();
        // A JSON string of n characters is n + 2 bytes: its quotes.
        const over = 'a'.repeat(Limits.payloadBytesMax - 1);
        const overError = await codeOf(store.append([env(id, 0, over)]));
        expect(overError).toBe(ErrorCode.LIMIT_EXCEEDED);
        expect(await harness.countRows(id)).toBe(0);
        const exact = 'a'.repeat(Limits.payloadBytesMax - 2);
        await store.append([env(id, 0, exact)]);
        expect((await store.read(id))[0]?.payload).toBe(exact);
        const nest = (levels: number) => {
          let deep: JsonValue = 1;
          for (let level = 0; level < levels; level++) deep = [deep];
          return deep;
        };
        expect(await codeOf(store.append([env(id, 1, nest(Limits.payloadDepthMax + 1))]))).toBe(
          ErrorCode.LIMIT_EXCEEDED,
        );
        expect(await harness.countRows(id)).toBe(1);
        await store.append([env(id, 1, nest(Limits.payloadDepthMax))]);
        expect(await harness.countRows(id)).toBe(2);
      });

      it('a read asks for at most readLimitMax events: that many is a page, one more is INVALID_ARGUMENT', async () => {
        // Paging a history longer than readLimitMax: the runtime conformance's 10,001-event resume.
        const id = freshId();
        await store.append(range(id, 0, 3));
        expect(await codeOf(store.read(id, { limit: Limits.readLimitMax + 1 }))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
        expect(await store.read(id, { limit: Limits.readLimitMax })).toHaveLength(3);
      });

      const badEnvelopes: Array<[string, (id: string) => unknown, string]> = [
        ['an empty execution id', () => [env('', 0)], ErrorCode.INVALID_ENVELOPE],
        [
          'an oversized execution id',
          () => [env('x'.repeat(Limits.executionIdLengthMax + 1), 0)],
          ErrorCode.LIMIT_EXCEEDED,
        ],
        [
          'a numeric execution id',
          () => [{ ...env('x', 0), executionId: 7 }],
          ErrorCode.INVALID_ENVELOPE,
        ],
        ['a negative sequence', (id) => [env(id, -1)], ErrorCode.INVALID_ENVELOPE],
        ['a fractional sequence', (id) => [env(id, 0.5)], ErrorCode.INVALID_ENVELOPE],
        ['a NaN sequence', (id) => [env(id, Number.NaN)], ErrorCode.INVALID_ENVELOPE],
        [
          'a string sequence',
          (id) => [{ ...env(id, 0), sequence: '0' }],
          ErrorCode.INVALID_ENVELOPE,
        ],
        ['an unknown field', (id) => [{ ...env(id, 0), extra: 1 }], ErrorCode.INVALID_ENVELOPE],
        [
          'a missing payload',
          (id) => [{ executionId: id, sequence: 0, type: 't' }],
          ErrorCode.INVALID_ENVELOPE,
        ],
        ['an empty type', (id) => [{ ...env(id, 0), type: '' }], ErrorCode.INVALID_ENVELOPE],
        [
          'an oversized type',
          (id) => [{ ...env(id, 0), type: 't'.repeat(Limits.eventTypeLengthMax + 1) }],
          ErrorCode.LIMIT_EXCEEDED,
        ],
        ['a negative at', (id) => [{ ...env(id, 0), at: -5 }], ErrorCode.INVALID_ENVELOPE],
        [
          'two executions in one append',
          (id) => [env(id, 0), env(`${id}-2`, 1)],
          ErrorCode.INVALID_ENVELOPE,
        ],
        ['non-consecutive sequences', (id) => [env(id, 0), env(id, 2)], ErrorCode.INVALID_ENVELOPE],
        ['an empty batch', () => [], ErrorCode.INVALID_ENVELOPE],
        ['not an array', (id) => env(id, 0), ErrorCode.INVALID_ENVELOPE],
        ['a null envelope', () => [null], ErrorCode.INVALID_ENVELOPE],
      ];
      for (const [what, make, code] of badEnvelopes) {
        it(`an append with ${what} is ${code} and writes nothing`, async () => {
          const id = freshId();
          expect(await codeOf(store.append(make(id) as EventEnvelope[]))).toBe(code);
          expect(await harness.countRows(id)).toBe(0);
          await store.append([env(id, 0)]);
          expect(await harness.countRows(id)).toBe(1);
        });
      }

      it('a malformed guard is refused', async () => {
        const id = freshId();
        expect(await codeOf(store.append([env(id, 0)], { fenceEpoch: -1 }))).toBe(
          ErrorCode.INVALID_ENVELOPE,
        );
        expect(
          await codeOf(
            store.append([env(id, 0)], { epoch: 1 } as unknown as { fenceEpoch: number }),
          ),
        ).toBe(ErrorCode.INVALID_ENVELOPE);
        expect(await harness.countRows(id)).toBe(0);
      });

      it('bad read options are INVALID_ARGUMENT', async () => {
        const id = freshId();
        expect(await codeOf(store.read(id, { limit: 0 }))).toBe(ErrorCode.INVALID_ARGUMENT);
        expect(await codeOf(store.read(id, { fromSequence: -1 }))).toBe(ErrorCode.INVALID_ARGUMENT);
        expect(await codeOf(store.readAll({ limit: Limits.readLimitMax + 1 }))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
        expect(await codeOf(store.readAll({ afterPosition: 1.5 }))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
        expect(await codeOf(store.read('', {}))).toBe(ErrorCode.INVALID_ENVELOPE);
      });

      it('a closed store refuses calls with STORE_CLOSED', async () => {
        const peer = await harness.openPeer();
        await peer.close();
        expect(await codeOf(peer.append([env(freshId(), 0)]))).toBe(ErrorCode.STORE_CLOSED);
        expect(await codeOf(peer.read(freshId()))).toBe(ErrorCode.STORE_CLOSED);
      });
    });

    section('ill-formed text in ids, types and names', () => {
      for (const [what, bad, position] of illFormedTexts) {
        it(`${what} in an id, a type or a signal name is refused and writes nothing`, async () => {
          const id = freshId('text');
          await store.append([env(id, 0)]);
          const invalid = ErrorCode.INVALID_ENVELOPE;
          await expectIllFormed(store.append([env(bad, 0)]), invalid, 'executionId', position);
          await expectIllFormed(
            store.append([{ ...env(id, 1), type: bad }]),
            invalid,
            'type',
            position,
          );
          const signal = { executionId: id, name: 'go', payload: null };
          await expectIllFormed(
            store.sendSignal({ ...signal, executionId: bad }),
            invalid,
            'executionId',
            position,
          );
          await expectIllFormed(
            store.sendSignal({ ...signal, name: bad }),
            invalid,
            'name',
            position,
          );
          await expectIllFormed(
            store.sendSignal({ ...signal, idempotencyKey: bad }),
            invalid,
            'idempotencyKey',
            position,
          );
          for (const call of [
            () => store.read(bad),
            () => store.verify(bad),
            () => store.readSignals(bad),
            () => store.fences.current(bad),
            () => store.fences.advance(bad),
          ]) {
            await expectIllFormed(call(), invalid, 'executionId', position);
          }
          await expectIllFormed(
            store.findExecutions({ status: 'running', afterExecutionId: bad }),
            ErrorCode.INVALID_ARGUMENT,
            'afterExecutionId',
            position,
          );
          const visible = await readAllEventually(store, (events) => events.length > 0);
          expect(visible.map((event) => event.executionId)).toEqual([id]);
          expect(await store.readSignals(id)).toEqual([]);
          expect(await store.fences.current(id)).toBe(0);
        });
      }

      it('well-formed neighbours of ill-formed ids stay distinct executions', async () => {
        const base = freshId('text');
        const ids = [`${base}\uFFFD`, `${base}\u{1F600}`, `${base}\u00E9`, `${base}e\u0301`];
        for (const id of ids) await store.append([{ ...env(id, 0), type: `t\u{1F600}${id}` }]);
        for (const id of ids) {
          const events = await store.read(id);
          expect(events.map((event) => [event.executionId, event.type])).toEqual([
            [id, `t\u{1F600}${id}`],
          ]);
        }
      });

      it('lone surrogates and NUL inside payload strings and keys round-trip and verify', async () => {
        const id = freshId('text');
        const payload = {
          lone: 'a\uD800b\uDC00',
          nul: 'x\u0000y',
          pair: '\u{1F600}',
          '\uDBFFkey\u0000': ['\uDFFF', { '\uD800': '\u0000' }],
        };
        await store.append([env(id, 0, payload)]);
        const peer = await harness.openPeer();
        try {
          for (const reader of [store, peer]) {
            expect((await reader.read(id))[0]?.payload).toEqual(payload);
            expect((await reader.verify(id)).ok).toBe(true);
          }
        } finally {
          await peer.close();
        }
      });
    });
  });
}
