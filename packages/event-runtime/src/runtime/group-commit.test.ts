import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useThrowawaySchemas } from '../../test/support/throwaway-schemas.js';
import { systemClock } from '../clock.js';
import type { StoredEvent } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import {
  type AppendOutcome,
  type AppendRequest,
  type BatchAppendingEventStore,
  canAppendBatch,
  type EventStore,
} from '../event-store.js';
import { ForwardingEventStore } from '../forwarding-event-store.js';
import { InMemoryEventStore } from '../store/memory/in-memory-event-store.js';
import { InMemoryLeaseStore } from '../store/memory/in-memory-lease-store.js';
import { InMemorySnapshotStore } from '../store/memory/in-memory-snapshot-store.js';
import { CountingEventStore } from '../testing/counting-event-store.js';
import { ManualClock } from '../testing/manual-clock.js';
import { postgresRuntimeHarness } from '../testing/postgres-harness.js';
import type { RuntimeHarness } from '../testing/runtime-conformance.js';
import { sqliteRuntimeHarness } from '../testing/sqlite-harness.js';
import { until } from '../testing/until.js';
import { ExecutionJournal } from './execution-journal.js';
import type { Flow } from './flow.js';
import { GroupCommit, type GroupCommitMember } from './group-commit.js';
import { createKernelRuntime, type KernelRuntime } from './runtime.js';
import type { KernelRuntimeOptions } from './runtime-options.js';

const dir = mkdtempSync(join(tmpdir(), 'loom-group-commit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const db = useThrowawaySchemas();
let files = 0;

/** A store whose next `appendBatch` commits and then loses its answer, as a dropped connection. */
class LostBatchAck extends ForwardingEventStore implements BatchAppendingEventStore {
  armed = 0;
  lost = 0;
  constructor(private readonly batching: BatchAppendingEventStore) {
    super(batching);
  }
  async appendBatch(requests: readonly AppendRequest[]): Promise<AppendOutcome[]> {
    const outcomes = await this.batching.appendBatch(requests);
    if (this.armed > 0 && requests.length > 1) {
      this.armed -= 1;
      this.lost += 1;
      throw new LoomError(
        ErrorCode.STORE_UNAVAILABLE,
        'test: the batch committed, its answer was lost',
      );
    }
    return outcomes;
  }
}

function memoryHarness(wrap: (store: EventStore) => EventStore): Promise<RuntimeHarness> {
  const clock = new ManualClock();
  const inner = new InMemoryEventStore({ clock });
  const store = wrap(inner);
  return Promise.resolve({
    store,
    leases: new InMemoryLeaseStore({ clock }),
    snapshots: new InMemorySnapshotStore(),
    clock,
    countRows: async (executionId) => (await inner.read(executionId)).length,
    close: () => store.close(),
  });
}

const backends: Array<
  [string, (wrap: (store: EventStore) => EventStore) => Promise<RuntimeHarness>]
> = [
  ['memory', memoryHarness],
  ['sqlite', (wrap) => sqliteRuntimeHarness(join(dir, `gc-${++files}.db`), { wrap })],
  [
    'postgres',
    (wrap) =>
      postgresRuntimeHarness(
        {
          connectionString: process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test',
          schema: db.freshSchema(),
        },
        { wrap },
      ),
  ],
];

function oneStep(name: string, gate?: Promise<void>): Flow<{ n: number }, number> {
  return {
    name,
    run: async (ctx, input) =>
      ctx.step('double', async () => {
        if (gate !== undefined) await gate;
        return input.n * 2;
      }),
  };
}

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

async function eventsOf(store: EventStore, executionId: string): Promise<StoredEvent[]> {
  return store.read(executionId);
}

describe.each(backends)('group commit on %s', (_name, open) => {
  const runtimes: KernelRuntime[] = [];
  const make = (
    store: EventStore,
    harness: RuntimeHarness,
    options: Partial<KernelRuntimeOptions> = {},
  ) => {
    const runtime = createKernelRuntime({
      store,
      clock: harness.clock,
      timerPollMs: 0,
      recoverEveryMs: 0,
      ...options,
    });
    runtimes.push(runtime);
    return runtime;
  };
  /** The backend's harness with the runtime's store counted (batches included). */
  const openCounting = async () => {
    let counting: CountingEventStore | undefined;
    const harness = await open((store) => {
      counting = new CountingEventStore(store);
      return counting;
    });
    return { harness, store: counting as CountingEventStore };
  };
  const finish = async (harness: RuntimeHarness) => {
    await Promise.all(runtimes.splice(0).map((runtime) => runtime.shutdown()));
    await harness.close();
  };

  it('executions that reach a barrier in one turn share one write: 20 one-step runs, 2 batches', async () => {
    const { harness, store } = await openCounting();
    try {
      expect(canAppendBatch(store)).toBe(true);
      const runtime = make(store, harness);
      const flow = oneStep('gc-double');
      const handles = await Promise.all(
        Array.from({ length: 20 }, (_, n) =>
          runtime.start(flow, { n }, { executionId: `gc-${n}` }),
        ),
      );
      expect(await Promise.all(handles.map((handle) => handle.result()))).toEqual(
        Array.from({ length: 20 }, (_, n) => n * 2),
      );
      // Two barriers per execution (start + step, then completion), each turn's in one write.
      expect(store.counts.appends).toBe(40);
      expect(store.counts.batches).toBe(2);
      expect(store.counts.batchedAppends).toBe(40);
      for (let n = 0; n < 20; n++) {
        expect((await eventsOf(store, `gc-${n}`)).map((event) => event.type)).toEqual([
          'execution.started',
          'step.started',
          'step.completed',
          'execution.completed',
        ]);
        expect((await store.verify(`gc-${n}`)).ok).toBe(true);
      }
    } finally {
      await finish(harness);
    }
  });

  it("parallel steps' early outcomes are group-committed too: 20 runs, one write for their fast steps", async () => {
    const { harness, store } = await openCounting();
    try {
      const runtime = make(store, harness);
      const gate = deferred<void>();
      const flow: Flow<{ n: number }, number[]> = {
        name: 'gc-siblings',
        run: async (ctx, input) =>
          Promise.all([
            ctx.step('fast', () => input.n),
            ctx.step('slow', async () => {
              await gate.promise;
              return input.n * 2;
            }),
          ]),
      };
      const handles = await Promise.all(
        Array.from({ length: 20 }, (_, n) =>
          runtime.start(flow, { n }, { executionId: `gs-${n}` }),
        ),
      );
      // Every 'fast' outcome is written while its 'slow' sibling runs, all 20 in one write.
      await until(() => store.counts.appends === 40, "the 20 'fast' outcomes written", 10_000);
      expect(store.counts.batches).toBe(2);
      gate.resolve();
      expect(await Promise.all(handles.map((handle) => handle.result()))).toEqual(
        Array.from({ length: 20 }, (_, n) => [n, n * 2]),
      );
      expect(store.counts.appends).toBe(60);
      expect(store.counts.batches).toBe(3);
      expect(store.counts.batchedAppends).toBe(60);
    } finally {
      await finish(harness);
    }
  });

  it('maxBatch bounds a write: 20 runs at maxBatch 8 take 3 writes per turn', async () => {
    const { harness, store } = await openCounting();
    try {
      const runtime = make(store, harness, { groupCommit: { maxBatch: 8 } });
      const flow = oneStep('gc-bounded');
      const handles = await Promise.all(
        Array.from({ length: 20 }, (_, n) =>
          runtime.start(flow, { n }, { executionId: `gb-${n}` }),
        ),
      );
      await Promise.all(handles.map((handle) => handle.result()));
      expect(store.counts.appends).toBe(40);
      // 8 + 8 + 4 per turn, two turns.
      expect(store.counts.batches).toBe(6);
      expect(store.counts.batchedAppends).toBe(40);
    } finally {
      await finish(harness);
    }
  });

  it('groupCommit: false appends every execution on its own', async () => {
    const { harness, store } = await openCounting();
    try {
      const runtime = make(store, harness, { groupCommit: false });
      const flow = oneStep('gc-off');
      const handles = await Promise.all(
        Array.from({ length: 10 }, (_, n) =>
          runtime.start(flow, { n }, { executionId: `go-${n}` }),
        ),
      );
      await Promise.all(handles.map((handle) => handle.result()));
      expect(store.counts.appends).toBe(20);
      expect(store.counts.batches).toBe(0);
    } finally {
      await finish(harness);
    }
  });

  it("a fenced-out execution in a batch fails alone: the batch's others commit", async () => {
    const { harness, store } = await openCounting();
    try {
      const runtime = make(store, harness);
      let open_!: () => void;
      const gate = new Promise<void>((resolve) => {
        open_ = resolve;
      });
      const flow = oneStep('gc-fenced', gate);
      const handles = await Promise.all(
        Array.from({ length: 10 }, (_, n) =>
          runtime.start(flow, { n }, { executionId: `gf-${n}` }),
        ),
      );
      // Another node takes execution gf-3 over while its step runs here.
      await store.fences.advance('gf-3');
      const before = store.counts.batches;
      open_();
      const others = handles.filter((_, n) => n !== 3);
      expect(await Promise.all(others.map((handle) => handle.result()))).toEqual(
        [0, 1, 2, 4, 5, 6, 7, 8, 9].map((n) => n * 2),
      );
      // gf-3's driver stopped here on its refused append (the other node drives it now).
      await until(() => !runtime.activeExecutions.includes('gf-3'), 'gf-3 to stop here');
      // The ten completions went in one write; only gf-3's was refused.
      expect(store.counts.batches - before).toBe(1);
      expect(store.counts.batchedAppends).toBe(20);
      for (let n = 0; n < 10; n++) {
        const types = (await eventsOf(store, `gf-${n}`)).map((event) => event.type);
        if (n === 3) expect(types).toEqual(['execution.started', 'step.started']);
        else expect(types.at(-1)).toBe('execution.completed');
      }
    } finally {
      await finish(harness);
    }
  });

  it('two racing starts of one id in one turn never share a write: one starts it, the other gets a handle', async () => {
    const { harness, store } = await openCounting();
    try {
      // Eager leases: both starts wait on the same lease grant, then both journal sequence 0.
      const runtime = make(store, harness, { leases: harness.leases, leaseMode: 'eager' });
      const flow = oneStep('gc-twice');
      const [a, b] = await Promise.all([
        runtime.start(flow, { n: 21 }, { executionId: 'gt-1' }),
        runtime.start(flow, { n: 21 }, { executionId: 'gt-1' }),
      ]);
      expect([a?.existing, b?.existing].sort()).toEqual([false, true]);
      expect(await a?.result()).toBe(42);
      expect(await b?.result()).toBe(42);
      expect((await eventsOf(store, 'gt-1')).map((event) => event.type)).toEqual([
        'execution.started',
        'step.started',
        'step.completed',
        'execution.completed',
      ]);
    } finally {
      await finish(harness);
    }
  });

  it('a batch that committed but lost its answer: every execution in it resumes from the log, nothing twice', async () => {
    let lossy: LostBatchAck | undefined;
    const harness = await open((store) => {
      lossy = new LostBatchAck(store as unknown as BatchAppendingEventStore);
      return lossy;
    });
    try {
      const store = lossy as LostBatchAck;
      const runtime = make(store, harness, { storeRetryDelayMs: 1, storeRetryDelayMaxMs: 1 });
      const ran: string[] = [];
      const flow: Flow<{ n: number }, number> = {
        name: 'gc-lost',
        run: async (ctx, input) => {
          const a = await ctx.step('a', (effect) => {
            ran.push(`${effect.executionId}:a`);
            return input.n;
          });
          return ctx.step('b', () => a + 1);
        },
      };
      const handles = await Promise.all(
        Array.from({ length: 6 }, (_, n) => runtime.start(flow, { n }, { executionId: `gl-${n}` })),
      );
      // The next multi-execution write (step a's completion + step b's start) commits, then fails.
      store.armed = 1;
      // The resumes wait out the store-retry delay on the manual clock.
      const results = await harness.clock.runUntilSettled(
        Promise.all(handles.map((handle) => handle.result())),
      );
      expect(store.lost).toBe(1);
      expect(results).toEqual([1, 2, 3, 4, 5, 6]);
      for (let n = 0; n < 6; n++) {
        const events = await eventsOf(store, `gl-${n}`);
        expect(events.map((event) => event.type)).toEqual([
          'execution.started',
          'step.started',
          'step.completed',
          'step.started',
          'step.completed',
          'execution.completed',
        ]);
        expect((await store.verify(`gl-${n}`)).ok).toBe(true);
      }
      // Step a's effect ran once per execution: its completion was in the log the resume read.
      expect(ran.filter((entry) => entry.endsWith(':a')).sort()).toEqual(
        Array.from({ length: 6 }, (_, n) => `gl-${n}:a`).sort(),
      );
    } finally {
      await finish(harness);
    }
  });
});

describe('group commit: options and stores without batches', () => {
  it('maxBatch out of range is INVALID_ARGUMENT naming the option', () => {
    for (const maxBatch of [0, 1_001, 2.5]) {
      let caught: unknown;
      try {
        createKernelRuntime({ store: new InMemoryEventStore(), groupCommit: { maxBatch } });
      } catch (error) {
        caught = error;
      }
      expect((caught as LoomError).code).toBe(ErrorCode.INVALID_ARGUMENT);
      expect((caught as LoomError).message).toContain('groupCommit.maxBatch');
    }
  });

  it('a groupCommit that is neither a boolean nor an object is INVALID_ARGUMENT', () => {
    for (const groupCommit of [null, 64, 'on']) {
      let caught: unknown;
      try {
        createKernelRuntime({ store: new InMemoryEventStore(), groupCommit: groupCommit as never });
      } catch (error) {
        caught = error;
      }
      expect((caught as LoomError).code).toBe(ErrorCode.INVALID_ARGUMENT);
      expect((caught as LoomError).fields.path).toBe('groupCommit');
    }
  });

  it("a member whose outcome handler throws is reported; the write's other members hear theirs", async () => {
    const store = new InMemoryEventStore();
    const reported: unknown[] = [];
    const commits = new GroupCommit(store, systemClock, 64, (error) => reported.push(error));
    const heard: string[] = [];
    const done = Array.from({ length: 3 }, () => deferred<void>());
    const member = (n: number): GroupCommitMember => {
      let taken = false;
      return {
        executionId: `gh-${n}`,
        takeAppend: () => {
          if (taken) return undefined;
          taken = true;
          return {
            envelopes: [{ executionId: `gh-${n}`, sequence: 0, type: 'x', payload: null }],
          };
        },
        appended: () => {
          heard.push(`gh-${n}`);
          done[n]?.resolve();
          if (n === 0) throw new Error('handler broke');
        },
        failed: (error) => {
          throw error;
        },
      };
    };
    for (let n = 0; n < 3; n++) commits.want(member(n));
    await Promise.all(done.map((entry) => entry.promise));
    expect(heard).toEqual(['gh-0', 'gh-1', 'gh-2']);
    expect(reported.map((error) => (error as Error).message)).toEqual(['handler broke']);
  });

  it("a journal's flush resolves even when its onAppended throws; the throw is reported", async () => {
    const store = new InMemoryEventStore();
    const reported: unknown[] = [];
    const commits = new GroupCommit(store, systemClock, 64, (error) => reported.push(error));
    const journal = new ExecutionJournal(commits, 'gj-1', 0, 0, systemClock);
    journal.onAppended = () => {
      throw new Error('snapshot broke');
    };
    journal.record('execution.started', { flow: 'f', version: null, input: null });
    await journal.flush();
    expect((await store.read('gj-1')).map((event) => event.type)).toEqual(['execution.started']);
    expect(reported.map((error) => (error as Error).message)).toEqual(['snapshot broke']);
  });

  it('a store whose appendBatch throws before returning fails every member, none hangs', async () => {
    const broken = new ForwardingEventStore(new InMemoryEventStore()) as ForwardingEventStore &
      BatchAppendingEventStore;
    broken.appendBatch = () => {
      throw new Error('broken store');
    };
    const commits = new GroupCommit(broken, systemClock, 64, () => undefined);
    const outcomes = Array.from({ length: 2 }, () => deferred<unknown>());
    for (let n = 0; n < 2; n++) {
      let taken = false;
      commits.want({
        executionId: `gb2-${n}`,
        takeAppend: () => {
          if (taken) return undefined;
          taken = true;
          return {
            envelopes: [{ executionId: `gb2-${n}`, sequence: 0, type: 'x', payload: null }],
          };
        },
        appended: () => outcomes[n]?.resolve('appended'),
        failed: (error) => outcomes[n]?.resolve((error as Error).message),
      });
    }
    expect(await Promise.all(outcomes.map((entry) => entry.promise))).toEqual([
      'broken store',
      'broken store',
    ]);
  });

  it('over a store without appendBatch every append goes on its own, from one turn', async () => {
    // ForwardingEventStore offers no appendBatch (a decorator that does not forward it).
    const store = new CountingEventStore(new ForwardingEventStore(new InMemoryEventStore()));
    expect(canAppendBatch(store)).toBe(false);
    const runtime = createKernelRuntime({ store, timerPollMs: 0, recoverEveryMs: 0 });
    try {
      const flow = oneStep('gc-memory');
      const handles = await Promise.all(
        Array.from({ length: 5 }, (_, n) => runtime.start(flow, { n }, { executionId: `gm-${n}` })),
      );
      expect(await Promise.all(handles.map((handle) => handle.result()))).toEqual([0, 2, 4, 6, 8]);
      expect(store.counts.appends).toBe(10);
      expect(store.counts.batches).toBe(0);
    } finally {
      await runtime.shutdown();
    }
  });
});
