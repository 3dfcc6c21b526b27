import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AppendGuard, EventEnvelope, JsonValue } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { type AppendRequest, type EventStore, isTransactional } from '../event-store.js';
import type { LeaseStore } from '../lease-store.js';
import { Limits } from '../limits.js';
import { deadNodeConfirmMs } from '../runtime/execution-recovery.js';
import type { Flow, FlowContext } from '../runtime/flow.js';
import { LeaseManager } from '../runtime/lease-manager.js';
import { loadState } from '../runtime/load-state.js';
import {
  createKernelRuntime,
  type KernelRuntime,
  type KernelRuntimeOptions,
} from '../runtime/runtime.js';
import { RuntimeEvents } from '../runtime/runtime-events.js';
import { runtimeDefaults } from '../runtime/runtime-options.js';
import {
  type ConformanceSections,
  conformanceSections,
  type RuntimeSection,
  runtimeSections,
} from './conformance-sections.js';
import { CountingEventStore } from './counting-event-store.js';
import { CountingSnapshotStore } from './counting-snapshot-store.js';
import { deferred } from './deferred.js';
import { expectIllFormed, freshId, illFormedTexts } from './event-store-conformance.js';
import { FlakyEventStore } from './flaky-event-store.js';
import { leaseCalls, tickLeases } from './lease-calls.js';
import { logTails } from './log-tails.js';
import { runtimeEventsConformance } from './runtime-events-conformance.js';
import type { RuntimeHarness } from './runtime-harness.js';
import { runtimeLogChecks } from './runtime-log-checks.js';
import { runtimeRecords } from './runtime-record-conformance.js';
import { runtimeRetries } from './runtime-retry-conformance.js';
import { runtimeStoreFaults } from './runtime-store-faults.js';
import { until as untilSeen } from './until.js';

export type { RuntimeHarness } from './runtime-harness.js';

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as LoomError).code ?? `untyped: ${String(error)}`;
  }
  return 'resolved';
}

/**
 * The code of what a failed execution's flow threw: `result()` rejects with `EXECUTION_FAILED`
 * (checked here), carrying it in `fields.thrown` (a `STEP_FAILED`) or `fields.error`.
 */
function thrownCode(error: LoomError): string {
  expect(error.code).toBe(ErrorCode.EXECUTION_FAILED);
  const fields = error.fields as { thrown?: { code?: string }; error?: { code?: string } };
  return (fields.thrown ?? fields.error)?.code ?? ErrorCode.EXECUTION_FAILED;
}

/** `thrownCode` of the error `promise` rejects with ('resolved' if it resolves). */
async function thrownCodeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return thrownCode(error as LoomError);
  }
  return 'resolved';
}

function stepsFlow(
  name: string,
  steps: number,
  ran: string[] = [],
): Flow<{ tag: string }, string[]> {
  return {
    name,
    run: async (ctx, input) => {
      const results: string[] = [];
      for (let index = 0; index < steps; index++) {
        results.push(
          await ctx.step(`step-${index}`, (effect) => {
            ran.push(`${effect.executionId}:${index}`);
            return `${input.tag}-${index}`;
          }),
        );
      }
      return results;
    },
  };
}

/**
 * The kernel's behaviour suite, run unchanged against every backend: steps and replay,
 * durability barriers (counted round trips), idempotent start, non-determinism, bad input,
 * cancel, leases, recovery and snapshots.
 */
export function runtimeConformance(
  name: string,
  open: () => Promise<RuntimeHarness>,
  options: ConformanceSections<RuntimeSection> = {},
): void {
  const { section, suffix } = conformanceSections('runtime', runtimeSections, options.sections);
  describe(`runtime conformance: ${name}${suffix}`, () => {
    let harness: RuntimeHarness;
    const runtimes: KernelRuntime[] = [];
    // A wait that times out says what the store held: the executions and their logs' tails.
    const until = (check: () => Promise<boolean> | boolean, what: string, deadlineMs?: number) =>
      untilSeen(check, what, deadlineMs, () => logTails(harness.store));
    const runtime = (options: Partial<KernelRuntimeOptions> = {}) => {
      const created = createKernelRuntime({
        store: harness.store,
        clock: harness.clock,
        timerPollMs: 0,
        // The suite calls recover() itself, to see what each round resumed.
        recoverEveryMs: 0,
        inlineWaitMs: 0,
        ...harness.runtimeOptions,
        ...options,
      });
      runtimes.push(created);
      return created;
    };

    beforeEach(async () => {
      harness = await open();
    });
    afterEach(async () => {
      await Promise.all(runtimes.splice(0).map((created) => created.shutdown()));
      await harness.close();
    });

    runtimeStoreFaults(() => harness, runtime, section);
    runtimeRetries(() => harness, runtime, section);
    runtimeLogChecks(() => harness, runtime, section);
    runtimeRecords(() => harness, runtime, section);
    runtimeEventsConformance(() => harness, runtime, section);

    section('steps and barriers', () => {
      for (const steps of [0, 1, 3, 10]) {
        it(`a ${steps}-step flow writes 2n + 2 events in n + 1 appends`, async () => {
          const counting = new CountingEventStore(harness.store);
          const created = runtime({ store: counting });
          const id = freshId('steps');
          const handle = await created.start(
            stepsFlow('steps', steps),
            { tag: 't' },
            { executionId: id },
          );
          expect(await handle.result()).toEqual(
            Array.from({ length: steps }, (_, index) => `t-${index}`),
          );
          expect(await harness.countRows(id)).toBe(2 * steps + 2);
          expect(counting.counts.appends).toBe(steps + 1);
          expect(handle.existing).toBe(false);
          const events = await harness.store.read(id);
          expect(events.map((event) => event.type)).toEqual([
            'execution.started',
            ...Array.from({ length: steps }, () => ['step.started', 'step.completed']).flat(),
            'execution.completed',
          ]);
          expect((await harness.store.verify(id)).ok).toBe(true);
        });
      }

      it('step.started is durable before the effect runs', async () => {
        const created = runtime();
        const id = freshId('durable');
        let rowsSeenByEffect = -1;
        const flow: Flow<null, number> = {
          name: 'durable-before-effect',
          run: async (ctx) =>
            ctx.step('look', async () => {
              rowsSeenByEffect = await harness.countRows(id);
              return rowsSeenByEffect;
            }),
        };
        await (await created.start(flow, null, { executionId: id })).result();
        expect(rowsSeenByEffect).toBe(2);
      });

      it('parallel steps share one append and replay deterministically', async () => {
        const counting = new CountingEventStore(harness.store);
        const created = runtime({ store: counting });
        const flow: Flow<null, number[]> = {
          name: 'parallel',
          run: async (ctx) => Promise.all([1, 2, 3].map((n) => ctx.step(`p-${n}`, () => n * 10))),
        };
        const handle = await created.start(flow, null);
        expect(await handle.result()).toEqual([10, 20, 30]);
        expect(counting.counts.appends).toBe(2);
        expect(await harness.countRows(handle.executionId)).toBe(8);
      });

      it("a parallel step's outcome is durable while its sibling's effect still runs", async () => {
        const counting = new CountingEventStore(harness.store);
        const created = runtime({ store: counting });
        const id = freshId('sibling');
        const gate = deferred();
        const flow: Flow<null, (number | string)[]> = {
          name: 'finished-sibling',
          run: async (ctx) =>
            Promise.all([
              ctx.step('fast', () => 1),
              ctx
                .step('fails', () => {
                  throw new TypeError('kaput');
                })
                .catch((error: LoomError) => error.code),
              ctx.step('slow', async () => {
                await gate.promise;
                return 3;
              }),
            ]),
        };
        const handle = await created.start(flow, null, { executionId: id });
        // Both outcomes reach the log while 'slow' runs: a crash now must not re-run them.
        const settled = async () => {
          const events = await harness.store.read(id);
          const names = (type: string) =>
            events
              .filter((event) => event.type === type)
              .map((event) => (event.payload as { name: string }).name);
          return names('step.completed').includes('fast') && names('step.failed').includes('fails');
        };
        await until(settled, "'fast' completed and 'fails' failed in the log", 10_000);
        gate.resolve();
        expect(await handle.result()).toEqual([1, ErrorCode.STEP_FAILED, 3]);
        // Started with the three step.started; the two outcomes of one turn; 'slow' with the end.
        expect(counting.counts.appends).toBe(3);
        expect(await harness.countRows(id)).toBe(8);
      });

      it('effects get a stable idempotency key', async () => {
        const created = runtime();
        const keys: string[] = [];
        const flow: Flow<null, null> = {
          name: 'keys',
          run: async (ctx) => {
            await ctx.step('a', (effect) => void keys.push(effect.idempotencyKey));
            await ctx.step('b', (effect) => void keys.push(effect.idempotencyKey));
            return null;
          },
        };
        const handle = await created.start(flow, null, { executionId: freshId('keys') });
        await handle.result();
        expect(keys).toEqual([`${handle.executionId}/0`, `${handle.executionId}/1`]);
      });

      it('a failed step is recorded and rethrown the same way on replay', async () => {
        const id = freshId('fail-step');
        const gate = deferred();
        let secondRuns = 0;
        const flow: Flow<null, string> = {
          name: 'fails-then-recovers',
          run: async (ctx) => {
            let note = 'none';
            try {
              await ctx.step('boom', () => {
                throw new TypeError('kaput');
              });
            } catch (error) {
              note = `${(error as LoomError).code}:${((error as LoomError).fields.error as { name: string }).name}`;
            }
            await ctx.step('after', async () => {
              secondRuns += 1;
              if (secondRuns === 1) await gate.promise;
              return 1;
            });
            return note;
          },
        };
        const first = runtime({ nodeId: 'first' });
        await first.start(flow, null, { executionId: id });
        await until(async () => secondRuns > 0, 'secondRuns > 0');
        // A second node takes over while 'after' is in flight: replay must see the same failure.
        const second = runtime({ nodeId: 'second', flows: [flow as Flow<never, unknown>] });
        const handle = await second.resume<string>(id);
        expect(await handle.result()).toBe('STEP_FAILED:TypeError');
        gate.resolve();
        expect(secondRuns).toBe(2);
      });
    });

    section('replay and resume', () => {
      it('resume replays recorded steps without re-running their effects', async () => {
        const id = freshId('resume');
        const ran: string[] = [];
        const hang = deferred();
        const flow: Flow<null, string> = {
          name: 'resumable',
          run: async (ctx) => {
            const a = await ctx.step('a', () => {
              ran.push('a');
              return 'A';
            });
            const b = await ctx.step('b', async () => {
              ran.push('b');
              if (ran.filter((entry) => entry === 'b').length === 1) await hang.promise;
              return 'B';
            });
            return a + b;
          },
        };
        const crashed = runtime({ nodeId: 'crashed' });
        const crashedHandle = await crashed.start<null, string>(flow, null, { executionId: id });
        await until(async () => ran.includes('b'), "step 'b' to run");
        // The first node is "dead" from here on: its effect never returns.
        const survivor = runtime({ nodeId: 'survivor', flows: [flow as Flow<never, unknown>] });
        const handle = await survivor.resume<string>(id);
        expect(await handle.result()).toBe('AB');
        expect(ran).toEqual(['a', 'b', 'b']);
        const completed = (await harness.store.read(id)).filter(
          (event) => event.type === 'step.completed',
        );
        expect(completed.map((event) => (event.payload as { name: string }).name)).toEqual([
          'a',
          'b',
        ]);
        hang.resolve();
        // The dead node's late completion is fenced out: its driver ends (having tried to append)
        // without writing, and its handle then reads the survivor's outcome from the log.
        expect(await crashedHandle.result()).toBe('AB');
        expect(crashed.activeExecutions).not.toContain(id);
        // started, a, b started, b interrupted (the survivor found b in flight: ADR 0031), b, completed.
        expect(await harness.countRows(id)).toBe(7);
        const types = (await harness.store.read(id)).map((event) => event.type);
        expect(types.filter((type) => type === 'step.interrupted')).toHaveLength(1);
      });

      it('a replay that asks for another step fails with NON_DETERMINISM naming both', async () => {
        const id = freshId('nondet');
        const hang = deferred();
        const v1: Flow<null, string> = {
          name: 'changing',
          run: async (ctx) => {
            await ctx.step('charge', () => 'charged');
            await ctx.step('ship', async () => {
              await hang.promise;
              return 'shipped';
            });
            return 'done';
          },
        };
        await runtime({ nodeId: 'old' }).start(v1, null, { executionId: id });
        await until(async () => (await harness.countRows(id)) >= 4, '4 rows');
        const v2: Flow<null, string> = {
          name: 'changing',
          run: async (ctx) => {
            await ctx.step('refund', () => 'refunded');
            return 'done';
          },
        };
        const handle = await runtime({ nodeId: 'new', flows: [v2 as Flow<never, unknown>] }).resume(
          id,
        );
        const error = (await handle.result().catch((caught) => caught)) as LoomError;
        expect(thrownCode(error)).toBe(ErrorCode.NON_DETERMINISM);
        expect(error.message).toMatch(/'charge'.*'refund'/);
        expect(error.fields.expected).toBe('charge');
        expect(error.fields.actual).toBe('refund');
        const events = await harness.store.read(id);
        expect(events[events.length - 1]?.type).toBe('execution.failed');
        hang.resolve();
      });

      it('resume of a flow this runtime does not know fails with FLOW_NOT_REGISTERED', async () => {
        const id = freshId('unknown-flow');
        const hang = deferred();
        await runtime().start(
          {
            name: 'elsewhere',
            run: async (ctx) => ctx.step('x', () => hang.promise.then(() => 1)),
          },
          null,
          { executionId: id },
        );
        await until(async () => (await harness.countRows(id)) >= 2, '2 rows');
        expect(await codeOf(runtime().resume(id))).toBe(ErrorCode.FLOW_NOT_REGISTERED);
        expect(await codeOf(runtime().resume(freshId('none')))).toBe(ErrorCode.EXECUTION_NOT_FOUND);
        hang.resolve();
      });
    });

    section('idempotent start', () => {
      it('20 concurrent starts of one id: one execution, 19 handles to it', async () => {
        const created = runtime();
        const id = freshId('idem');
        const ran: string[] = [];
        const flow = stepsFlow('idem', 2, ran);
        const handles = await Promise.all(
          Array.from({ length: 20 }, () => created.start(flow, { tag: 'x' }, { executionId: id })),
        );
        expect(handles.filter((handle) => !handle.existing)).toHaveLength(1);
        expect(handles.filter((handle) => handle.existing)).toHaveLength(19);
        const results = await Promise.all(handles.map((handle) => handle.result()));
        for (const result of results) expect(result).toEqual(['x-0', 'x-1']);
        expect(ran).toHaveLength(2);
        expect(await harness.countRows(id)).toBe(6);
      });

      it('a start racing on two runtimes: one execution, effects run once', async () => {
        const id = freshId('idem-2');
        const ran: string[] = [];
        const flow = stepsFlow('idem-two', 1, ran);
        const [a, b] = await Promise.all([
          runtime({ nodeId: 'a' }).start(flow, { tag: 'a' }, { executionId: id }),
          runtime({ nodeId: 'b' }).start(flow, { tag: 'b' }, { executionId: id }),
        ]);
        expect([a?.existing, b?.existing].sort()).toEqual([false, true]);
        const [ra, rb] = await Promise.all([a?.result(), b?.result()]);
        expect(ra).toEqual(rb);
        expect(ran).toHaveLength(1);
        expect(await harness.countRows(id)).toBe(4);
      });

      it('a second start of an id this runtime is still starting returns once the execution is in the log', async () => {
        const created = runtime();
        const id = freshId('idem-log');
        // Held in its step, so the execution is still running (a settled one refuses signals).
        const hold = deferred();
        const flow: Flow<null, string> = {
          name: 'idem-then-signal',
          run: async (ctx) => ctx.step('hold', () => hold.promise.then(() => 'x-0')),
        };
        const first = created.start(flow, null, { executionId: id });
        const second = await created.start(flow, null, { executionId: id });
        expect(second.existing).toBe(true);
        // Sent right after the second start returned: the inbox takes it only for a logged id.
        expect(await created.signal(id, 'note', 'after the second start')).toMatchObject({
          duplicate: false,
        });
        expect((await first).existing).toBe(false);
        hold.resolve();
        expect(await second.result()).toBe('x-0');
        expect((await harness.store.readSignals(id)).map((signal) => signal.payload)).toEqual([
          'after the second start',
        ]);
      });

      it('a second start waits for the first start of its id to fail, then starts it itself', async () => {
        // The first start's append fails before writing; the second's, made after it, writes.
        const flaky = new FlakyEventStore(harness.store);
        flaky.failNext({ appends: { count: 1, mode: 'before' } });
        const created = runtime({ store: flaky });
        const id = freshId('idem-fail');
        const flow = stepsFlow('idem-after-failure', 1);
        const first = created.start(flow, { tag: 'a' }, { executionId: id });
        const second = created.start(flow, { tag: 'b' }, { executionId: id });
        expect(await codeOf(first)).toBe(ErrorCode.STORE_UNAVAILABLE);
        const handle = await second;
        expect(handle.existing).toBe(false);
        expect(await handle.result()).toEqual(['b-0']);
        expect(await harness.countRows(id)).toBe(4);
      });

      it('handOffStarts: start() writes the execution due and runs nothing; another node runs it', async () => {
        const ran: string[] = [];
        const flowOn = (node: string): Flow<number, string> => ({
          name: 'handed-off',
          run: async (ctx, input) =>
            ctx.step('work', () => {
              ran.push(node);
              return `${node}:${input}`;
            }),
        });
        const sender = runtime({ nodeId: 'web', handOffStarts: true });
        const worker = runtime({
          nodeId: 'worker',
          flows: [flowOn('worker') as Flow<never, unknown>],
        });
        const id = freshId('handoff');
        const handle = await sender.start(flowOn('web'), 7, { executionId: id });
        expect(handle.existing).toBe(false);
        // Durable when start() returned: sequence 0 alone, the execution due at once.
        expect((await harness.store.read(id)).map((event) => event.type)).toEqual([
          'execution.started',
        ]);
        const [summary] = await harness.store
          .findExecutions({ status: 'suspended', limit: 1_000 })
          .then((found) => found.filter((row) => row.executionId === id));
        expect(summary?.wakeAtMs).not.toBeNull();
        expect(summary?.startedBy).toBeNull();
        // Started again: the same execution, still nothing run.
        expect((await sender.start(flowOn('web'), 7, { executionId: id })).existing).toBe(true);
        expect(ran).toEqual([]);
        expect(await worker.wakeDue()).toEqual([id]);
        expect(await handle.result()).toBe('worker:7');
        expect(ran).toEqual(['worker']);
      });

      it('handOffStarts: retry() writes execution.retried with the execution due, runs nothing, needs no flow; another node runs the retry', async () => {
        let failing = true;
        const ran: string[] = [];
        const flow: Flow<null, string> = {
          name: 'retried-elsewhere',
          run: async (ctx) => {
            await ctx.step('first', () => 'first');
            return ctx.step('flaky', () => {
              ran.push(failing ? 'failed' : 'ran');
              if (failing) throw new Error('not yet');
              return 'done';
            });
          },
        };
        const worker = runtime({ nodeId: 'worker', flows: [flow as Flow<never, unknown>] });
        const id = freshId('retry-handoff');
        const failed = await worker.start(flow, null, { executionId: id });
        expect(await codeOf(failed.result())).toBe(ErrorCode.EXECUTION_FAILED);
        // An operator's runtime: no flow registered, nothing driven.
        const operator = runtime({ nodeId: 'operator', handOffStarts: true });
        failing = false;
        const handle = await operator.retry(id);
        const types = (await harness.store.read(id)).map((event) => event.type);
        expect(types.slice(-2)).toEqual(['execution.failed', 'execution.retried']);
        const [row] = (
          await harness.store.findExecutions({ status: 'suspended', limit: 1_000 })
        ).filter((summary) => summary.executionId === id);
        expect(row?.wakeAtMs).not.toBeNull();
        expect(ran).toEqual(['failed']);
        // Retried again before a worker took it: the execution is no longer failed.
        expect(await codeOf(operator.retry(id))).toBe(ErrorCode.EXECUTION_NOT_FAILED);
        expect(await worker.wakeDue()).toEqual([id]);
        expect(await handle.result()).toBe('done');
        // The completed step replayed; only the failed one ran again, on the worker.
        expect(ran).toEqual(['failed', 'ran']);
      });

      it('handOffStarts is checked: a value that is not a boolean is INVALID_ARGUMENT', () => {
        expect(() => runtime({ handOffStarts: 'yes' as never })).toThrow(
          expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }),
        );
      });

      it('minted ids are ULIDs and unique', async () => {
        const created = runtime();
        const flow = stepsFlow('minted', 0);
        const ids = new Set<string>();
        for (let index = 0; index < 5; index++)
          ids.add((await created.start(flow, { tag: '' })).executionId);
        expect(ids.size).toBe(5);
        for (const id of ids) expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
      });
    });

    section('bad input', () => {
      const failing: Array<[string, Flow<null, unknown>, string]> = [
        [
          'a flow that throws a non-Error',
          { name: 'throws-string', run: async () => Promise.reject('just a string') },
          'EXECUTION_FAILED',
        ],
        [
          'a flow that returns a non-serializable value',
          { name: 'returns-function', run: async () => () => 1 },
          ErrorCode.PAYLOAD_NOT_JSON,
        ],
        [
          // The effect ran, so the step fails durably (a replay fails it the same way).
          'a step whose result is not JSON',
          { name: 'bad-result', run: async (ctx) => ctx.step('big', () => 10n) },
          ErrorCode.STEP_FAILED,
        ],
        [
          'a duplicate step name',
          {
            name: 'dup',
            run: async (ctx) => {
              await ctx.step('same', () => 1);
              return ctx.step('same', () => 2);
            },
          },
          ErrorCode.DUPLICATE_STEP_NAME,
        ],
        [
          'an empty step name',
          { name: 'empty', run: async (ctx) => ctx.step('', () => 1) },
          ErrorCode.INVALID_STEP_NAME,
        ],
      ];
      for (const [what, flow, code] of failing) {
        it(`${what} is recorded as execution.failed (${code}); the runtime stays healthy`, async () => {
          const created = runtime();
          const handle = await created.start(flow, null);
          const error = (await handle.result().catch((caught) => caught)) as LoomError;
          expect(thrownCode(error)).toBe(code);
          const events = await harness.store.read(handle.executionId);
          const last = events[events.length - 1];
          expect(last?.type).toBe('execution.failed');
          const recorded = (
            last!.payload as { error: { code?: string; name: string; message: string } }
          ).error;
          if (code === 'EXECUTION_FAILED') {
            expect(recorded).toEqual({ name: 'NonError', message: 'just a string' });
          } else {
            expect(recorded.code).toBe(code);
          }
          const healthy = await created.start(stepsFlow('healthy', 1), { tag: 'ok' });
          expect(await healthy.result()).toEqual(['ok-0']);
        });
      }

      it('a start with input JSON cannot hold writes nothing', async () => {
        const id = freshId('bad-input');
        const created = runtime();
        expect(
          await codeOf(created.start(stepsFlow('x', 1), { tag: 1n } as never, { executionId: id })),
        ).toBe(ErrorCode.PAYLOAD_NOT_JSON);
        expect(await codeOf(created.start({ name: '', run: async () => 1 }, null))).toBe(
          ErrorCode.INVALID_FLOW,
        );
        expect(
          await codeOf(created.start(stepsFlow('x', 1), { tag: '' }, { executionId: '' })),
        ).toBe(ErrorCode.INVALID_ENVELOPE);
        expect(await harness.countRows(id)).toBe(0);
      });
    });

    section('cancel', () => {
      it('a local cancel aborts the effect and ends the execution as cancelled', async () => {
        const created = runtime();
        let aborted = false;
        const flow: Flow<null, string> = {
          name: 'cancellable',
          run: async (ctx) =>
            ctx.step('wait', (effect) => {
              return new Promise<string>((_, reject) => {
                effect.signal.addEventListener('abort', () => {
                  aborted = true;
                  reject(new Error('aborted'));
                });
              });
            }),
        };
        const handle = await created.start(flow, null);
        await until(async () => (await harness.countRows(handle.executionId)) >= 2, '2 rows');
        expect(await created.cancel(handle.executionId, 'operator said so')).toBe(true);
        expect(aborted).toBe(true);
        const error = (await handle.result().catch((caught) => caught)) as LoomError;
        expect(error.code).toBe(ErrorCode.EXECUTION_CANCELLED);
        const events = await harness.store.read(handle.executionId);
        expect(events.map((event) => event.type)).toEqual([
          'execution.started',
          'step.started',
          'execution.cancelled',
        ]);
        expect(await created.cancel(handle.executionId, 'again')).toBe(false);
      });

      it('a cancel from another node fences the owner out', async () => {
        const hang = deferred();
        const owner = runtime({ nodeId: 'owner' });
        const flow: Flow<null, string> = {
          name: 'remote-cancel',
          run: async (ctx) => {
            await ctx.step('slow', () => hang.promise.then(() => 1));
            return ctx.step('never', () => 'x');
          },
        };
        const handle = await owner.start(flow, null);
        await until(async () => (await harness.countRows(handle.executionId)) >= 2, '2 rows');
        const operator = runtime({ nodeId: 'operator' });
        expect(await operator.cancel(handle.executionId, 'stop it')).toBe(true);
        hang.resolve();
        expect(await codeOf(handle.result())).toBe(ErrorCode.EXECUTION_CANCELLED);
        expect(await codeOf(operator.attach(handle.executionId).result())).toBe(
          ErrorCode.EXECUTION_CANCELLED,
        );
        const types = (await harness.store.read(handle.executionId)).map((event) => event.type);
        expect(types).toEqual(['execution.started', 'step.started', 'execution.cancelled']);
      });
    });

    section('leases', () => {
      it('lazy: a short execution never touches the lease store', async () => {
        const created = runtime({ leases: harness.leases });
        const handles = await Promise.all(
          Array.from({ length: 10 }, () => created.start(stepsFlow('short', 2), { tag: 's' })),
        );
        await Promise.all(handles.map((handle) => handle.result()));
        await tickLeases(created);
        expect(leaseCalls(created)).toEqual({ acquireMany: 0, renewMany: 0, releaseMany: 0 });
      });

      it('lazy: long executions are leased after the grace in one batch, renewed in one call per tick', async () => {
        const hang = deferred();
        const created = runtime({ leases: harness.leases, leaseTtlMs: 30_000 });
        const flow: Flow<null, number> = {
          name: 'long',
          run: async (ctx) => ctx.step('wait', () => hang.promise.then(() => 1)),
        };
        const handles = await Promise.all(
          Array.from({ length: 5 }, () => created.start(flow, null)),
        );
        await tickLeases(created);
        expect(leaseCalls(created).acquireMany).toBe(0);
        // The renewal timer runs on the runtime's clock: advancing it ticks the leases.
        await harness.clock.advance(10_000);
        expect(leaseCalls(created).acquireMany).toBe(1);
        for (const handle of handles) {
          // The tick's acquireMany may still be on its way to a remote store.
          await until(
            async () => (await harness.leases.get(handle.executionId))?.owner === created.nodeId,
            'the lazy lease',
          );
        }
        await harness.clock.advance(10_000);
        expect(leaseCalls(created).renewMany).toBe(1);
        hang.resolve();
        await Promise.all(handles.map((handle) => handle.result()));
        // The renewal tick may still be in flight: a tick asked for meanwhile joins it.
        await until(async () => {
          await tickLeases(created);
          return leaseCalls(created).releaseMany === 1;
        }, 'the releases');
        expect(leaseCalls(created).renewMany).toBe(1);
        for (const handle of handles)
          expect(await harness.leases.get(handle.executionId)).toBeUndefined();
      });

      it('eager: a lease before the first append, released at the end', async () => {
        const created = runtime({ leases: harness.leases, leaseMode: 'eager' });
        let leasedDuringEffect = false;
        const flow: Flow<null, null> = {
          name: 'eager',
          run: async (ctx) => {
            await ctx.step('check', async (effect) => {
              leasedDuringEffect =
                (await harness.leases.get(effect.executionId))?.owner === created.nodeId;
            });
            return null;
          },
        };
        const handle = await created.start(flow, null);
        await handle.result();
        await tickLeases(created);
        expect(leasedDuringEffect).toBe(true);
        expect(await harness.leases.get(handle.executionId)).toBeUndefined();
      });

      it('a node that loses its lease stops driving and its effect sees the abort', async () => {
        const aNode = runtime({
          nodeId: 'a',
          leases: harness.leases,
          leaseMode: 'eager',
          leaseTtlMs: 3_000,
          // A stalled node: its renewals come later than the lease lasts.
          renewEveryMs: 60_000,
        });
        let sawAbort = false;
        const release = deferred();
        const flow: Flow<null, string> = {
          name: 'lose-lease',
          run: async (ctx) => {
            await ctx.step('long', async (effect) => {
              effect.signal.addEventListener('abort', () => {
                sawAbort = true;
              });
              await release.promise;
              return 1;
            });
            return 'finished';
          },
        };
        const handle = await aNode.start(flow, null);
        await until(async () => (await harness.countRows(handle.executionId)) >= 2, '2 rows');
        await harness.clock.advance(3_001);
        const bNode = runtime({
          nodeId: 'b',
          leases: harness.leases,
          flows: [flow as Flow<never, unknown>],
        });
        expect(await bNode.recover()).toEqual([handle.executionId]);
        await tickLeases(aNode);
        expect(sawAbort).toBe(true);
        release.resolve();
        expect(await handle.result()).toBe('finished');
        const completions = (await harness.store.read(handle.executionId)).filter(
          (event) => event.type === 'execution.completed',
        );
        expect(completions).toHaveLength(1);
      });
    });

    section('recovery', () => {
      it('recovers an unleased execution only after it went quiet', async () => {
        const hang = deferred();
        const flow: Flow<null, string> = {
          name: 'quiet',
          run: async (ctx) => {
            await ctx.step('stuck', () => hang.promise.then(() => 1));
            return 'recovered';
          },
        };
        const dead = runtime({ nodeId: 'dead' });
        const handle = await dead.start(flow, null);
        await until(async () => (await harness.countRows(handle.executionId)) >= 2, '2 rows');
        const rescuer = runtime({
          nodeId: 'rescuer',
          flows: [flow as Flow<never, unknown>],
          recoverQuietMs: 5_000,
        });
        expect(await rescuer.recover()).toEqual([]);
        await harness.clock.advance(5_001);
        expect(await rescuer.recover()).toEqual([handle.executionId]);
        hang.resolve();
        expect(await rescuer.attach(handle.executionId).result()).toBe('recovered');
        expect(await rescuer.recover()).toEqual([]);
      });
    });

    section('recovery of dead nodes', () => {
      const hangingOn = (hang: Promise<void>): Flow<null, string> => ({
        name: 'dead-node',
        run: async (ctx) => {
          await ctx.step('stuck', () => hang.then(() => 1));
          return 'recovered';
        },
      });
      // A ten-minute lease: waiting it out would time the test out, so what is recovered here
      // was recovered because its owner was known dead.
      const longTtlMs = 600_000;

      /**
       * An execution running in the log, mid-step, driven by a node that takes no leases and
       * claims no node id: to the others it is as good as dead.
       */
      const orphan = async (flow: Flow<null, string>) => {
        const handle = await runtime({ nodeId: 'lost', leaseMode: 'off' }).start(flow, null);
        await until(async () => (await harness.countRows(handle.executionId)) >= 2, '2 rows');
        return handle.executionId;
      };

      it('an execution leased by a node whose claim is gone is taken over at once', async () => {
        const hang = deferred();
        const flow = hangingOn(hang.promise);
        const id = await orphan(flow);
        await harness.leases.acquireMany('ghost', [id], longTtlMs);
        const ghost = await harness.leases.claimNode('ghost');
        const rescuer = runtime({
          nodeId: 'rescuer',
          leases: harness.leases,
          flows: [flow as Flow<never, unknown>],
        });
        // Alive (its claim held): its lease is respected.
        expect(await rescuer.recover()).toEqual([]);
        await ghost?.release();
        // Seen alive here a moment ago: its death is confirmed first (a claim session may only
        // have dropped: ADR 0044), by a round the rescuer runs once deadNodeConfirmMs passed.
        const recovered: string[] = [];
        rescuer.events.on('execution:recovered', (event) => recovered.push(event.executionId));
        expect(await rescuer.recover()).toEqual([]);
        await harness.clock.advance(deadNodeConfirmMs - 1);
        expect(recovered).toEqual([]);
        await harness.clock.advance(1);
        await rescuer.recover();
        expect(recovered).toEqual([id]);
        expect((await harness.leases.get(id))?.owner).toBe('rescuer');
        hang.resolve();
        expect(await rescuer.attach(id).result()).toBe('recovered');
      });

      it('an eager start of an id a dead node leased but never started runs it here', async () => {
        // The kill -9 campaign found it: a worker SIGKILLed between its eager lease and its
        // `execution.started` left the lease; its restart's start() of the same id resolved
        // with a handle to an execution nobody would ever start.
        const flow: Flow<null, string> = {
          name: 'dead-start',
          run: async (ctx) => ctx.step('only', () => 'started'),
        };
        await harness.leases.acquireMany('ghost', ['dead-start-1'], longTtlMs);
        const starter = runtime({
          nodeId: 'starter',
          leases: harness.leases,
          leaseMode: 'eager',
          flows: [flow as Flow<never, unknown>],
        });
        const handle = await starter.start(flow, null, { executionId: 'dead-start-1' });
        const result = await Promise.race([
          handle.result(),
          new Promise<string>((resolve) => {
            const timer = setTimeout(() => resolve('not started within 5 s'), 5_000);
            void handle
              .result()
              .finally(() => clearTimeout(timer))
              .catch(() => undefined);
          }),
        ]);
        expect(result).toBe('started');
        expect(await harness.countRows('dead-start-1')).toBe(4);
      });

      it('a node resumes at once what an earlier incarnation of its id leased', async () => {
        const hang = deferred();
        const flow = hangingOn(hang.promise);
        const id = await orphan(flow);
        await harness.leases.acquireMany('worker-1', [id], longTtlMs);
        const reborn = runtime({
          nodeId: 'worker-1',
          leases: harness.leases,
          flows: [flow as Flow<never, unknown>],
        });
        expect(await reborn.recover()).toEqual([id]);
        hang.resolve();
        expect(await reborn.attach(id).result()).toBe('recovered');
        expect(await reborn.recover()).toEqual([]);
      });

      it("a parent its child's end made due is resumed by that wake-up though a dead node's lease is on it", async () => {
        // Reported from a restarted process: the parent suspended on its child in a process that
        // was then killed before its lease on the parent went back (releases ride the next lease
        // tick); the restart recovered the child, whose end made the parent due and claimed it,
        // but could not lease it, and it waited for the next recovery round.
        const hang = deferred<number>();
        let attempts = 0;
        const child: Flow<null, number> = {
          name: 'child-of-a-dead-node',
          run: (ctx) => ctx.step('work', () => (++attempts === 1 ? hang.promise : 2)),
        };
        const parent: Flow<null, number> = {
          name: 'parent-of-a-dead-node',
          run: async (ctx) => (await ctx.child(child, null)) + 1,
        };
        const flows = [parent as Flow<never, unknown>, child as Flow<never, unknown>];
        const parentId = freshId('dead-parent');
        const childId = `${parentId}.0`;
        // The killed process: it claims no node id, so the others read it as dead.
        const killed = runtime({ nodeId: 'killed', leaseMode: 'off', flows });
        await killed.start(parent, null, { executionId: parentId });
        await until(
          async () =>
            (await harness.store.findExecutions({ status: 'suspended' })).some(
              (summary) => summary.executionId === parentId,
            ),
          'parent suspension',
        );
        await until(async () => (await harness.countRows(childId)) >= 2, "the child's step");
        // The lease it held on the parent when it died.
        await harness.leases.acquireMany('killed', [parentId], longTtlMs);
        const restarted = runtime({
          nodeId: 'restarted',
          leases: harness.leases,
          flows,
          // Polls armed on the suite's manual clock, which stands still: the only claim of the
          // parent is the one its child's end runs (ADR 0047).
          timerPollMs: 60_000,
        });
        const recovered: string[] = [];
        const woken: string[] = [];
        restarted.events.on('execution:recovered', (event) => recovered.push(event.executionId));
        restarted.events.on('execution:resumed', (event) => {
          if (event.cause === 'timer') woken.push(event.executionId);
        });
        await restarted.recover();
        expect(recovered).toEqual([childId]);
        await until(
          () => woken.includes(parentId),
          "the parent's resume by its child's wake-up",
          10_000,
        );
        expect(await restarted.attach(parentId).result()).toBe(3);
        // One recovery round (the boot round, which took the child): the parent came by its wake-up.
        expect(recovered).toEqual([childId]);
        hang.resolve(0);
      });

      it('an unleased execution is taken at once when no other node is alive, not while one is', async () => {
        const hang = deferred();
        const flow = hangingOn(hang.promise);
        const id = await orphan(flow);
        const sibling = await harness.leases.claimNode('sibling');
        const rescuer = runtime({
          nodeId: 'rescuer',
          leases: harness.leases,
          flows: [flow as Flow<never, unknown>],
        });
        // Another node is alive and could be driving it (a lazy start not leased yet).
        expect(await rescuer.recover()).toEqual([]);
        await sibling?.release();
        // Counted alive a moment ago: alone only once deadNodeConfirmMs passed (ADR 0044), in
        // the round the rescuer runs then.
        const recovered: string[] = [];
        rescuer.events.on('execution:recovered', (event) => recovered.push(event.executionId));
        expect(await rescuer.recover()).toEqual([]);
        await harness.clock.advance(deadNodeConfirmMs - 1);
        expect(recovered).toEqual([]);
        await harness.clock.advance(1);
        await rescuer.recover();
        expect(recovered).toEqual([id]);
        hang.resolve();
        expect(await rescuer.attach(id).result()).toBe('recovered');
      });

      /**
       * The lease store as a node that died looks to the others: it believes it holds its claim
       * (so it starts lazily and says so in the log) but nobody else sees it alive, and it leases
       * nothing. Its driver, hanging in a step, stands for the work the dead process left.
       */
      const deadNodeLeases = (): LeaseStore => ({
        acquireMany: async () => new Set<string>(),
        renewMany: async () => [],
        releaseMany: async () => undefined,
        get: (executionId) => harness.leases.get(executionId),
        claimNode: async (nodeId) => ({ nodeId, release: async () => undefined }),
        liveNodes: (nodeIds) => harness.leases.liveNodes(nodeIds),
        countLiveNodes: () => harness.leases.countLiveNodes(),
        close: async () => undefined,
      });

      it('a lazy start says which node started it in the index; eager starts and continued runs do not', async () => {
        const flow = stepsFlow('started-by', 1);
        const lazy = runtime({ nodeId: 'lazy-starter', leases: harness.leases });
        const eager = runtime({
          nodeId: 'eager-starter',
          leases: harness.leases,
          leaseMode: 'eager',
        });
        const unleased = runtime({ nodeId: 'no-leases', leaseMode: 'off' });
        const ids = [freshId('lazy'), freshId('eager'), freshId('off')] as const;
        await (await lazy.start(flow, { tag: 'a' }, { executionId: ids[0] })).result();
        await (await eager.start(flow, { tag: 'b' }, { executionId: ids[1] })).result();
        await (await unleased.start(flow, { tag: 'c' }, { executionId: ids[2] })).result();
        const found = await harness.store.findExecutions({ flow: flow.name, limit: 1_000 });
        const startedBy = async (id: string) =>
          found.find((summary) => summary.executionId === id)?.startedBy;
        expect(await startedBy(ids[0])).toBe('lazy-starter');
        expect(await startedBy(ids[1])).toBeNull();
        expect(await startedBy(ids[2])).toBeNull();
        // Kept by the status changes after the start (the run above settled).
        expect((await harness.store.read(ids[0]))[0]?.payload).toMatchObject({
          node: 'lazy-starter',
        });
      });

      it('an unleased lazy start of a dead node is taken over at once, not after recoverQuietMs', async () => {
        const hang = deferred();
        const flow = hangingOn(hang.promise);
        const ghost = runtime({ nodeId: 'ghost-starter', leases: deadNodeLeases() });
        const handle = await ghost.start(flow, null);
        const id = handle.executionId;
        await until(async () => (await harness.countRows(id)) >= 2, '2 rows');
        expect(await harness.leases.get(id)).toBeUndefined();
        // A live node besides the rescuer: not alone, so only the starter's death lets it in.
        const sibling = await harness.leases.claimNode('sibling');
        const rescuer = runtime({
          nodeId: 'rescuer',
          leases: harness.leases,
          flows: [flow as Flow<never, unknown>],
        });
        // Never seen alive here: dead at once, with its log far from quiet (the test's clock
        // stands still; recoverQuietMs is 40 s by default).
        expect(await rescuer.recover()).toEqual([id]);
        expect((await harness.leases.get(id))?.owner).toBe('rescuer');
        hang.resolve();
        expect(await rescuer.attach(id).result()).toBe('recovered');
        await sibling?.release();
      });

      it('an unleased lazy start of a live node stays its own until its log is quiet for recoverQuietMs', async () => {
        const hang = deferred();
        const flow = hangingOn(hang.promise);
        // Alive to the others (its claim held for it), but leasing nothing: a starter whose
        // driver lost the execution without anyone leasing it.
        const starterClaim = await harness.leases.claimNode('live-starter');
        const starter = runtime({ nodeId: 'live-starter', leases: deadNodeLeases() });
        const id = (await starter.start(flow, null)).executionId;
        await until(async () => (await harness.countRows(id)) >= 2, '2 rows');
        const rescuer = runtime({
          nodeId: 'rescuer',
          leases: harness.leases,
          recoverQuietMs: 40_000,
          flows: [flow as Flow<never, unknown>],
        });
        expect(await rescuer.recover()).toEqual([]);
        await harness.clock.advance(40_000 - 1);
        expect(await rescuer.recover()).toEqual([]);
        await harness.clock.advance(1);
        expect(await rescuer.recover()).toEqual([id]);
        hang.resolve();
        expect(await rescuer.attach(id).result()).toBe('recovered');
        await starterClaim?.release();
      });

      it('a node resumes at once what an earlier incarnation of its id started lazily', async () => {
        const hang = deferred();
        const flow = hangingOn(hang.promise);
        const earlier = runtime({ nodeId: 'worker-2', leases: deadNodeLeases() });
        const id = (await earlier.start(flow, null)).executionId;
        await until(async () => (await harness.countRows(id)) >= 2, '2 rows');
        const sibling = await harness.leases.claimNode('sibling-2');
        const reborn = runtime({
          nodeId: 'worker-2',
          leases: harness.leases,
          flows: [flow as Flow<never, unknown>],
        });
        expect(await reborn.recover()).toEqual([id]);
        hang.resolve();
        expect(await reborn.attach(id).result()).toBe('recovered');
        await sibling?.release();
      });

      /**
       * A handed-off start (due at once) that `claimer` claimed through a store whose claim
       * committed and whose answer was then lost (`STORE_UNAVAILABLE`): running in the index,
       * leased by nobody, driven by nobody. `web` (the starter) stays alive, so no node is alone.
       */
      const lostClaim = async (claimer: KernelRuntime, flaky: FlakyEventStore, flow: Flow) => {
        const sender = runtime({ nodeId: 'web', handOffStarts: true, leases: harness.leases });
        const handle = await sender.start(flow, { tag: 'lost' });
        const id = handle.executionId;
        flaky.failNext({ claimsAfter: 1 });
        expect(await codeOf(claimer.wakeDue())).toBe(ErrorCode.STORE_UNAVAILABLE);
        expect(flaky.failed.claims).toBe(1);
        const [row] = (await harness.store.findExecutions({ status: 'running' })).filter(
          (summary) => summary.executionId === id,
        );
        expect(row?.claimedBy).toBe(claimer.nodeId);
        expect(await harness.leases.get(id)).toBeUndefined();
        expect(claimer.activeExecutions).toEqual([]);
        return handle;
      };
      // Ten minutes: what is recovered within the test was not recovered for its quiet log.
      const quietForeverMs = 600_000;

      it("a claim whose answer was lost is resumed by its claimer's next recovery round, not after recoverQuietMs", async () => {
        const ran: string[] = [];
        const flow = stepsFlow('claim-lost-ack', 2, ran);
        const flaky = new FlakyEventStore(harness.store);
        const claimer = runtime({
          nodeId: 'claimer',
          store: flaky,
          leases: harness.leases,
          recoverQuietMs: quietForeverMs,
          recoverEveryMs: 1_000,
          flows: [flow as Flow<never, unknown>],
        });
        const recovered: string[] = [];
        claimer.events.on('execution:recovered', (event) => recovered.push(event.executionId));
        // Its boot round ran before anything was due.
        await claimer.recover();
        const handle = await lostClaim(claimer, flaky, flow as Flow);
        const id = handle.executionId;
        // Another live node leaves it alone while the claimer lives: the claimer's to take.
        const peer = runtime({
          nodeId: 'peer',
          leases: harness.leases,
          recoverQuietMs: quietForeverMs,
          flows: [flow as Flow<never, unknown>],
        });
        expect(await peer.recover()).toEqual([]);
        expect(recovered).toEqual([]);
        await harness.clock.advance(1_000);
        await until(() => recovered.includes(id), 'the claimer recovering its lost claim');
        expect(await handle.result()).toEqual(['lost-0', 'lost-1']);
        expect(ran).toEqual([`${id}:0`, `${id}:1`]);
        expect(recovered).toEqual([id]);
        expect(await harness.countRows(id)).toBe(6);
      });

      it('a recovery round on the claimer while its timer poll is still leasing what it claimed leaves that to the poll: driven once', async () => {
        const ran: string[] = [];
        const flow = stepsFlow('claim-slow-ack', 1, ran);
        const claimedInside = deferred();
        const answer = deferred();
        /** A claim that commits, then answers only once the test says so. */
        class SlowClaimAnswer extends CountingEventStore {
          override async claimDue(...args: Parameters<EventStore['claimDue']>) {
            const claimed = await super.claimDue(...args);
            claimedInside.resolve();
            await answer.promise;
            return claimed;
          }
        }
        // The round's look at the lease (the execution is unleased then) lets the claim answer:
        // the poll then leases it while the round decides.
        let looked: ((executionId: string) => void) | undefined;
        const leases: LeaseStore = {
          acquireMany: (...args) => harness.leases.acquireMany(...args),
          renewMany: (...args) => harness.leases.renewMany(...args),
          releaseMany: (...args) => harness.leases.releaseMany(...args),
          claimNode: (...args) => harness.leases.claimNode(...args),
          liveNodes: (...args) => harness.leases.liveNodes(...args),
          countLiveNodes: () => harness.leases.countLiveNodes(),
          close: async () => undefined,
          get: async (executionId) => {
            const lease = await harness.leases.get(executionId);
            looked?.(executionId);
            return lease;
          },
        };
        const claimer = runtime({
          nodeId: 'slow-claimer',
          store: new SlowClaimAnswer(harness.store),
          leases,
          recoverQuietMs: quietForeverMs,
          flows: [flow as Flow<never, unknown>],
        });
        const sender = runtime({ nodeId: 'web', handOffStarts: true, leases: harness.leases });
        const handle = await sender.start(flow, { tag: 'slow' });
        const id = handle.executionId;
        const waking = claimer.wakeDue();
        await claimedInside.promise;
        // Running and claimed here, not leased yet: what a lost answer leaves, but the poll lives.
        const [row] = (await harness.store.findExecutions({ status: 'running' })).filter(
          (summary) => summary.executionId === id,
        );
        expect(row?.claimedBy).toBe('slow-claimer');
        looked = (executionId) => {
          if (executionId === id) answer.resolve();
        };
        const round = claimer.recover();
        expect(await waking).toEqual([id]);
        expect(await round).toEqual([]);
        expect(await handle.result()).toEqual(['slow-0']);
        expect(ran).toEqual([`${id}:0`]);
        expect(await harness.countRows(id)).toBe(4);
      });

      it('a lost claim of a dead claimer is taken over at once by another node', async () => {
        const flow = stepsFlow('claim-lost-dead', 1);
        const flaky = new FlakyEventStore(harness.store);
        const claimer = runtime({
          nodeId: 'doomed-claimer',
          store: flaky,
          leases: harness.leases,
          recoverQuietMs: quietForeverMs,
          flows: [flow as Flow<never, unknown>],
        });
        const handle = await lostClaim(claimer, flaky, flow as Flow);
        await claimer.shutdown();
        // Never seen alive by the rescuer: dead at once. `web` lives: not alone either.
        const rescuer = runtime({
          nodeId: 'rescuer',
          leases: harness.leases,
          recoverQuietMs: quietForeverMs,
          flows: [flow as Flow<never, unknown>],
        });
        expect(await rescuer.recover()).toEqual([handle.executionId]);
        expect(await handle.result()).toEqual(['lost-0']);
      });

      it('a live node keeps its lazily started executions: another node recovers none of them', async () => {
        const hang = deferred();
        const flow = hangingOn(hang.promise);
        const owner = runtime({
          nodeId: 'owner',
          leases: harness.leases,
          flows: [flow as Flow<never, unknown>],
        });
        const handle = await owner.start(flow, null);
        await until(async () => (await harness.countRows(handle.executionId)) >= 2, '2 rows');
        const other = runtime({
          nodeId: 'other',
          leases: harness.leases,
          flows: [flow as Flow<never, unknown>],
        });
        expect(await other.recover()).toEqual([]);
        // Past the lazy grace the owner leases it; the other node still leaves it alone.
        await harness.clock.advance(10_001);
        await tickLeases(owner);
        expect((await harness.leases.get(handle.executionId))?.owner).toBe('owner');
        expect(await other.recover()).toEqual([]);
        hang.resolve();
        expect(await handle.result()).toBe('recovered');
        expect(owner.activeExecutions).toEqual([]);
      });

      it("a runtime given no lease store uses its event store's and claims its node id there", async () => {
        // SQLite and Postgres stores have one (the same database); the memory store has none.
        const defaults = harness.store.defaultLeaseStore?.();
        expect(defaults).toBe(harness.store.defaultLeaseStore?.());
        const live = async () =>
          defaults === undefined
            ? 'no lease store'
            : [...(await defaults.liveNodes(['defaulted']))];
        const created = runtime({ nodeId: 'defaulted' });
        const handle = await created.start(stepsFlow('defaulted', 1), { tag: 't' });
        expect(await handle.result()).toEqual(['t-0']);
        expect(await live()).toEqual(defaults === undefined ? 'no lease store' : ['defaulted']);
        await created.shutdown();
        expect(await live()).toEqual(defaults === undefined ? 'no lease store' : []);
      });

      it('a second live runtime given the same nodeId is reported as NODE_ID_IN_USE and still runs', async () => {
        const first = runtime({ nodeId: 'twin', leases: harness.leases });
        const flow = stepsFlow('twin', 1);
        expect(await (await first.start(flow, { tag: 'a' })).result()).toEqual(['a-0']);
        const errors: LoomError[] = [];
        const second = runtime({
          nodeId: 'twin',
          leases: harness.leases,
          onError: (error) => errors.push(error as LoomError),
        });
        expect(await (await second.start(flow, { tag: 'b' })).result()).toEqual(['b-0']);
        expect(errors.map((error) => [error.code, error.fields.nodeId])).toEqual([
          [ErrorCode.NODE_ID_IN_USE, 'twin'],
        ]);
        // The first still holds the id; once it shuts down, the id is free.
        expect(await harness.leases.liveNodes(['twin'])).toEqual(new Set(['twin']));
        await first.shutdown();
        expect(await harness.leases.liveNodes(['twin'])).toEqual(new Set());
      });

      it('recovery runs as the runtime starts and every recoverEveryMs by default', async () => {
        const hang = deferred();
        const flow = hangingOn(hang.promise);
        const id = await orphan(flow);
        await harness.leases.acquireMany('ghost', [id], longTtlMs);
        // Default recovery settings (the suite's helper turns the periodic round off).
        const booted = createKernelRuntime({
          ...harness.runtimeOptions,
          store: harness.store,
          clock: harness.clock,
          timerPollMs: 0,
          nodeId: 'booted',
          leases: harness.leases,
          flows: [flow as Flow<never, unknown>],
        });
        runtimes.push(booted);
        await until(async () => booted.activeExecutions.includes(id), 'the boot recovery');
        hang.resolve();
        expect(await booted.attach(id).result()).toBe('recovered');
        // Stuck for good on the lost node: only a recovery can finish it (the booted node's flow
        // runs on the resolved promise).
        const stuck = deferred();
        const later = await orphan(hangingOn(stuck.promise));
        await harness.leases.acquireMany('ghost', [later], longTtlMs);
        expect(await booted.status(later)).toBe('running');
        await harness.clock.advance(runtimeDefaults.recoverEveryMs);
        await until(
          async () => (await booted.status(later)) !== 'running',
          'the periodic recovery',
        );
        expect(await booted.attach(later).result()).toBe('recovered');
        stuck.resolve();
      });
    });

    section('durable time, signals, values, versions, children, continue-as-new', () => {
      const wait = until;
      const statusOf = async (id: string) => {
        for (const status of ['running', 'suspended', 'settled'] as const) {
          const found = await harness.store.findExecutions({ status });
          if (found.some((summary) => summary.executionId === id)) return status;
        }
        return 'none';
      };
      const typesOf = async (id: string) =>
        (await harness.store.read(id)).map((event) => event.type);

      it('start() of an existing sleeping execution attaches without waiting for its timer', async () => {
        // Another node would hold a 30-minute sleep in memory (inlineWaitMs of an hour): start()
        // of the existing id must not run the flow up to that sleep and wait there.
        const napper: Flow<null, string> = {
          name: 'napper',
          run: async (ctx) => {
            await ctx.sleep(30 * 60_000);
            return ctx.step('after', () => 'rested');
          },
        };
        const id = freshId('attach-sleeping');
        const first = runtime({ nodeId: 'first' });
        await first.start(napper, null, { executionId: id });
        await wait(async () => (await statusOf(id)) === 'suspended', 'suspension');
        const second = runtime({ nodeId: 'second', inlineWaitMs: 3_600_000 });
        const startedAt = harness.clock.now();
        let deadline: ReturnType<typeof setTimeout> | undefined;
        const handle = await Promise.race([
          second.start(napper, null, { executionId: id }),
          new Promise<never>((_, reject) => {
            deadline = setTimeout(
              () => reject(new Error("start() of an existing id waited for the flow's timer")),
              10_000,
            );
          }),
        ]).finally(() => clearTimeout(deadline));
        expect(handle.existing).toBe(true);
        expect(harness.clock.now()).toBe(startedAt);
        expect(second.activeExecutions).toEqual([]);
        expect(await typesOf(id)).toEqual([
          'execution.started',
          'timer.scheduled',
          'execution.suspended',
        ]);
        await harness.clock.advance(30 * 60_000);
        expect(await first.wakeDue()).toEqual([id]);
        expect(await handle.result()).toBe('rested');
      });

      it('a sleeping execution suspends (holding nothing) and a timer service wakes it when due', async () => {
        const sleeper: Flow<null, string> = {
          name: 'sleeper',
          run: async (ctx) => {
            await ctx.step('before', () => 1);
            await ctx.sleep(10_000);
            return ctx.step('after', () => 'woke');
          },
        };
        const first = runtime({ nodeId: 'first' });
        const handle = await first.start(sleeper, null);
        await wait(async () => (await statusOf(handle.executionId)) === 'suspended', 'suspension');
        expect(first.activeExecutions).toEqual([]);
        expect(await typesOf(handle.executionId)).toEqual([
          'execution.started',
          'step.started',
          'step.completed',
          'timer.scheduled',
          'execution.suspended',
        ]);
        const other = runtime({ nodeId: 'other', flows: [sleeper as Flow<never, unknown>] });
        expect(await other.wakeDue()).toEqual([]);
        await harness.clock.advance(10_000);
        expect(await other.wakeDue()).toEqual([handle.executionId]);
        expect(await handle.result()).toBe('woke');
        expect(await first.wakeDue()).toEqual([]);
        const types = await typesOf(handle.executionId);
        expect(types.slice(5)).toEqual([
          'timer.fired',
          'step.started',
          'step.completed',
          'execution.completed',
        ]);
      });

      it('signals: kept in order before the wait, delivered once per key, woken from another node', async () => {
        const waiter: Flow<null, JsonValue[]> = {
          name: 'waiter',
          run: async (ctx) => {
            const got: JsonValue[] = [];
            for (let index = 0; index < 3; index++) {
              const signal = await ctx.waitForSignal('note');
              got.push(signal.received ? signal.payload : 'none');
            }
            return got;
          },
        };
        const owner = runtime({ nodeId: 'owner', flows: [waiter as Flow<never, unknown>] });
        const sender = runtime({ nodeId: 'sender' });
        const handle = await owner.start(waiter, null, { executionId: freshId('waiter') });
        await sender.signal(handle.executionId, 'note', 'a');
        await sender.signal(handle.executionId, 'note', 'b', { idempotencyKey: 'k' });
        expect(
          await sender.signal(handle.executionId, 'note', 'b-again', { idempotencyKey: 'k' }),
        ).toMatchObject({
          duplicate: true,
        });
        await wait(async () => (await statusOf(handle.executionId)) === 'suspended', 'suspension');
        await sender.signal(handle.executionId, 'note', 'c');
        await wait(
          async () =>
            (await owner.wakeDue()).length > 0 ||
            (await statusOf(handle.executionId)) === 'settled',
          'wake',
        );
        expect(await handle.result()).toEqual(['a', 'b', 'c']);
        expect(await codeOf(sender.signal(handle.executionId, 'note', 'late'))).toBe(
          ErrorCode.EXECUTION_SETTLED,
        );
      });

      /**
       * Issues 28 and 33: node `a` suspends on a signal while its lease is still held (releases
       * ride its next lease tick); the signal comes after its own look at the inbox, and `b`'s
       * timer poll claims the execution first, but is refused the lease (`a` holds it and lives).
       * Polls and lease ticks are driven here, the clock stands still and recovery rounds are
       * off: only a wake-up can resume it. Returns the wake-ups each node ran, as `node:id`.
       */
      const refusedClaim = async () => {
        const waiter: Flow<null, JsonValue> = {
          name: 'refused-claim',
          run: async (ctx) => {
            const signal = await ctx.waitForSignal('go');
            return signal.received ? signal.payload : 'none';
          },
        };
        const flows = [waiter as Flow<never, unknown>];
        const a = runtime({ nodeId: 'a', leases: harness.leases, leaseMode: 'eager', flows });
        const b = runtime({ nodeId: 'b', leases: harness.leases, flows });
        const woken: string[] = [];
        for (const node of [a, b]) {
          node.events.on('execution:resumed', (event) => {
            if (event.cause === 'timer') woken.push(`${node.nodeId}:${event.executionId}`);
          });
        }
        const handle = await a.start(waiter, null, { executionId: freshId('refused') });
        const id = handle.executionId;
        await wait(async () => (await statusOf(id)) === 'suspended', 'suspension');
        // Its look at the inbox after the suspension is done: the signal comes after it.
        await a.idle();
        expect((await harness.leases.get(id))?.owner).toBe('a');
        await b.signal(id, 'go', 'went');
        expect(await b.wakeDue()).toEqual([]);
        return { a, b, handle, id, woken };
      };

      it('a claim refused its lease leaves the execution due: the lease holder takes it on its next poll', async () => {
        const { a, handle, id, woken } = await refusedClaim();
        expect(await a.wakeDue()).toEqual([id]);
        expect(await handle.result()).toBe('went');
        expect(woken).toEqual([`a:${id}`]);
      });

      it('a claim refused its lease leaves the execution due: once the lease is released, the next poll takes it', async () => {
        const { a, b, handle, id, woken } = await refusedClaim();
        await tickLeases(a);
        expect(await harness.leases.get(id)).toBeUndefined();
        expect([...(await b.wakeDue()), ...(await a.wakeDue())]).toEqual([id]);
        expect(await handle.result()).toBe('went');
        expect(woken).toEqual([`b:${id}`]);
        // Nothing was left for a recovery round.
        expect(await b.recover()).toEqual([]);
      });

      it('a signal wait times out durably', async () => {
        const flow: Flow<null, JsonValue> = {
          name: 'timeout',
          run: async (ctx) => {
            const signal = await ctx.waitForSignal('never', { timeoutMs: 5_000 });
            return signal.received ? 'got' : 'timed out';
          },
        };
        const node = runtime({ flows: [flow as Flow<never, unknown>] });
        const handle = await node.start(flow, null);
        await wait(async () => (await statusOf(handle.executionId)) === 'suspended', 'suspension');
        await harness.clock.advance(5_000);
        expect(await node.wakeDue()).toEqual([handle.executionId]);
        expect(await handle.result()).toBe('timed out');
        expect(await typesOf(handle.executionId)).toContain('signal.timed_out');
      });

      // ADR 0042: when a signal and a wait's timeout are both due at resume, the signal's arrival
      // time in the inbox decides, and the decision is recorded in the log.
      const lateOrEarly: Flow<null, JsonValue> = {
        name: 'late-or-early',
        run: async (ctx) => {
          const first = await ctx.waitForSignal('go', { timeoutMs: 5_000 });
          if (first.received) return { first: first.payload };
          // A signal that lost to the timeout stays in the inbox: the next wait of its name gets it.
          const next = await ctx.waitForSignal('go');
          return { first: 'timed out', next: next.received ? next.payload : 'none' };
        },
      };

      /**
       * Starts `lateOrEarly` as `id` on a node that shuts down once it is suspended, and returns
       * another node that has the flow. The starter's look at the inbox after suspending
       * (`wakeIfSignalled`) would otherwise race the test's signal and resume the run before the
       * `wakeDue` the test means to be its only wake-up.
       */
      const suspendedElsewhere = async (id: string) => {
        const starter = runtime({
          nodeId: 'starter',
          flows: [lateOrEarly as Flow<never, unknown>],
        });
        await starter.start(lateOrEarly, null, { executionId: id });
        await wait(async () => (await statusOf(id)) === 'suspended', 'suspension');
        await starter.shutdown();
        return runtime({ flows: [lateOrEarly as Flow<never, unknown>] });
      };

      it('a signal that arrived at or after the deadline loses to the timeout when both are due at resume', async () => {
        const id = freshId('late-signal');
        const node = await suspendedElsewhere(id);
        // Nobody wakes the run until both are due: it arrives exactly at the deadline.
        await harness.clock.advance(5_000);
        await node.signal(id, 'go', 'late');
        expect(await node.wakeDue()).toEqual([id]);
        expect(await node.attach(id).result()).toEqual({ first: 'timed out', next: 'late' });
        const events = await harness.store.read(id);
        const ended = events.filter((e) => e.type.startsWith('signal.'));
        expect(ended.map((e) => [e.type, (e.payload as { index: number }).index])).toEqual([
          ['signal.waiting', 0],
          ['signal.timed_out', 0],
          ['signal.waiting', 1],
          ['signal.received', 1],
        ]);
        expect(ended[1]?.payload).toMatchObject({ lateSignalId: 1 });
        // Replay reads the decision back: a resume from the log gives the same result.
        const replayed = runtime({
          nodeId: 'replayer',
          flows: [lateOrEarly as Flow<never, unknown>],
        });
        expect(await replayed.attach(id).result()).toEqual({ first: 'timed out', next: 'late' });
      });

      it('a signal that arrived before the deadline wins though the resume comes after it', async () => {
        const id = freshId('early-signal');
        const node = await suspendedElsewhere(id);
        await harness.clock.advance(4_999);
        await node.signal(id, 'go', 'early');
        // Nobody claims the wake-up before the deadline passes too.
        await harness.clock.advance(10_000);
        expect(await node.wakeDue()).toEqual([id]);
        expect(await node.attach(id).result()).toEqual({ first: 'early' });
        expect(await typesOf(id)).not.toContain('signal.timed_out');
      });

      it('now, random and uuid are recorded and replayed', async () => {
        const seen: JsonValue[] = [];
        const flow: Flow<null, JsonValue> = {
          name: 'values',
          run: async (ctx) => {
            const values = { now: ctx.now(), random: ctx.random(), uuid: ctx.uuid() };
            seen.push(values);
            await ctx.sleep(1_000);
            return values;
          },
        };
        const node = runtime({ flows: [flow as Flow<never, unknown>] });
        const handle = await node.start(flow, null);
        await wait(async () => (await statusOf(handle.executionId)) === 'suspended', 'suspension');
        await harness.clock.advance(1_000);
        await node.wakeDue();
        const result = await handle.result();
        expect(seen).toHaveLength(2);
        expect(seen[1]).toEqual(seen[0]);
        expect(result).toEqual(seen[0]);
        expect((result as { uuid: string }).uuid).toMatch(/^[0-9a-f-]{36}$/);
      });

      it('patched: old executions keep the old path, new ones take the new one', async () => {
        const v1: Flow<null, string> = {
          name: 'versioned',
          run: async (ctx) => {
            await ctx.step('a', () => 1);
            await ctx.step('b', () => 2);
            await ctx.sleep(1_000);
            return 'v1';
          },
        };
        const v2: Flow<null, string> = {
          name: 'versioned',
          run: async (ctx) => {
            await ctx.step('a', () => 1);
            const patched = ctx.patched('add-c');
            if (patched) await ctx.step('c', () => 3);
            await ctx.step('b', () => 2);
            await ctx.sleep(1_000);
            return patched ? 'v2-new' : 'v2-old';
          },
        };
        const old = runtime({ nodeId: 'old' });
        const oldHandle = await old.start(v1, null);
        await wait(
          async () => (await statusOf(oldHandle.executionId)) === 'suspended',
          'suspension',
        );
        const upgraded = runtime({ nodeId: 'upgraded', flows: [v2 as Flow<never, unknown>] });
        const newHandle = await upgraded.start(v2, null);
        await wait(
          async () => (await statusOf(newHandle.executionId)) === 'suspended',
          'suspension',
        );
        await harness.clock.advance(1_000);
        await upgraded.wakeDue();
        expect(await oldHandle.result()).toBe('v2-old');
        expect(await newHandle.result()).toBe('v2-new');
        expect(await typesOf(newHandle.executionId)).toContain('patch.marked');
      });

      it('the append that suspends says what the execution waits for, in the same write (ADR 0062)', async () => {
        const child: Flow<null, JsonValue> = {
          name: 'waits-child-signal',
          run: async (ctx) => (await ctx.waitForSignal('go')).received,
        };
        const flows: Array<[Flow<null, JsonValue>, string[]]> = [
          [
            { name: 'waits-sleep', run: async (ctx) => ctx.sleep(60_000).then(() => null) },
            ['timer'],
          ],
          [
            {
              name: 'waits-signal-timeout',
              run: async (ctx) => (await ctx.waitForSignal('go', { timeoutMs: 60_000 })).received,
            },
            ['timer', 'signal'],
          ],
          [
            {
              name: 'waits-approval',
              run: async (ctx) => (await ctx.waitForSignal('ok', { kind: 'approval' })).received,
            },
            ['approval'],
          ],
          [
            {
              name: 'waits-several',
              run: async (ctx) => {
                const [, answer] = await Promise.all([
                  ctx.sleep(60_000),
                  ctx.waitForSignal('answer', { kind: 'question' }),
                ]);
                return answer.received;
              },
            },
            ['timer', 'question'],
          ],
          [{ name: 'waits-child', run: async (ctx) => ctx.child(child, null) }, ['child']],
        ];
        for (const [flow, kinds] of flows) {
          // Each guard with the execution whose append carried it: the parent's and the child's
          // suspensions race (either may be written first).
          const guards: Array<AppendGuard & { of: string | undefined }> = [];
          const keep = (envelopes: readonly EventEnvelope[], guard: AppendGuard | undefined) => {
            if (guard !== undefined) guards.push({ ...guard, of: envelopes[0]?.executionId });
          };
          const counting = new CountingEventStore(harness.store);
          const recording: EventStore = Object.assign(Object.create(counting) as EventStore, {
            append: (envelopes: readonly EventEnvelope[], guard?: AppendGuard) => {
              keep(envelopes, guard);
              return counting.append(envelopes, guard);
            },
            ...(counting.appendBatch === undefined
              ? {}
              : {
                  appendBatch: (requests: readonly AppendRequest[]) => {
                    for (const request of requests) keep(request.envelopes, request.guard);
                    return (counting.appendBatch as NonNullable<typeof counting.appendBatch>)(
                      requests,
                    );
                  },
                }),
          });
          const node = runtime({
            store: recording,
            flows: [flow as Flow<never, unknown>, child as Flow<never, unknown>],
          });
          const id = freshId(flow.name);
          await node.start(flow, null, { executionId: id });
          await wait(async () => (await statusOf(id)) === 'suspended', `${flow.name} suspended`);
          const summary = (await harness.store.findExecutions({ status: 'suspended' })).find(
            (found) => found.executionId === id,
          );
          expect([flow.name, summary?.waitingFor]).toEqual([flow.name, kinds]);
          // The suspending append carried the kinds: they cost no write of their own (the start,
          // then the wait's record with the suspension: two appends per execution, as before).
          const suspending = guards.filter((guard) => guard.status === 'suspended');
          expect(
            suspending
              .map((guard) => [guard.of === id ? 'parent' : 'child', guard.waitingFor])
              .sort(),
          ).toEqual(
            flow.name === 'waits-child'
              ? [
                  ['child', ['signal']],
                  ['parent', kinds],
                ]
              : [['parent', kinds]],
          );
          const appendsAtRest = counting.counts.appends;
          expect([flow.name, appendsAtRest]).toEqual([
            flow.name,
            flow.name === 'waits-child' ? 4 : 2,
          ]);
          await node.shutdown();
        }
      });

      it('a child runs to its output; a failing child is CHILD_FAILED in the parent', async () => {
        const child: Flow<{ n: number }, number> = {
          name: 'child',
          run: async (ctx, input) => {
            if (input.n < 0) throw new RangeError('negative');
            return ctx.step('double', () => input.n * 2);
          },
        };
        const parent: Flow<null, JsonValue> = {
          name: 'parent',
          run: async (ctx) => {
            const doubled = await ctx.child(child, { n: 21 });
            let failure = 'none';
            try {
              await ctx.child(child, { n: -1 });
            } catch (error) {
              failure = (error as LoomError).code;
            }
            return { doubled, failure };
          },
        };
        const node = runtime({
          timerPollMs: 5,
          flows: [parent as Flow<never, unknown>, child as Flow<never, unknown>],
        });
        const handle = await node.start(parent, null, { executionId: freshId('parent') });
        expect(await handle.result()).toEqual({ doubled: 42, failure: ErrorCode.CHILD_FAILED });
        const started = (await harness.store.read(`${handle.executionId}.0`))[0];
        expect(started?.payload).toMatchObject({
          parent: { executionId: handle.executionId, index: 0 },
        });
      });

      it("a child's end wakes its waiting parent even when its node dies right after the child's terminal append", async () => {
        // The crash-point enumeration found it ('after execution.suspended' on a loaded box): the
        // parent suspended on its child, the child completed, and the process died before the
        // separate signal that was to wake the parent: suspended with no wake time, for good.
        const gate = deferred();
        const child: Flow<null, number> = {
          name: 'gated-child',
          run: (ctx) =>
            ctx.step('work', async () => {
              await gate.promise;
              return 2;
            }),
        };
        const parent: Flow<null, number> = {
          name: 'child-waiting-parent',
          run: async (ctx) => (await ctx.child(child, null)) + 1,
        };
        const flows = [parent as Flow<never, unknown>, child as Flow<never, unknown>];
        const parentId = freshId('orphaned-parent');
        const childId = `${parentId}.0`;
        // The dying node's view of the store: once the child's terminal append has committed,
        // the process is gone, and nothing it would write or read after that reaches the store.
        let dead = false;
        const gone = () =>
          Promise.reject(new LoomError(ErrorCode.STORE_CLOSED, 'the node died (test)'));
        const ends = (envelopes: readonly EventEnvelope[]) =>
          envelopes.some(
            (envelope) =>
              envelope.executionId === childId && envelope.type === 'execution.completed',
          );
        const dying = new Proxy(harness.store, {
          get(inner, property) {
            const value = Reflect.get(inner, property, inner);
            if (typeof value !== 'function') return value;
            return (...args: unknown[]) => {
              if (dead) return gone();
              const result = value.apply(inner, args);
              const appended =
                property === 'append'
                  ? ends(args[0] as EventEnvelope[])
                  : property === 'appendBatch' &&
                    (args[0] as AppendRequest[]).some((request) => ends(request.envelopes));
              if (!appended) return result;
              return (result as Promise<unknown>).then(() => {
                dead = true;
                return gone();
              });
            };
          },
        });
        const doomed = runtime({ nodeId: 'doomed', store: dying, flows });
        await doomed.start(parent, null, { executionId: parentId });
        await wait(async () => (await statusOf(parentId)) === 'suspended', 'parent suspension');
        gate.resolve();
        await wait(async () => (await statusOf(childId)) === 'settled', "the child's end");
        await wait(() => dead, 'the node to die');
        // Another node: nothing is running, so recovery has nothing to do; the parent must be due.
        const survivor = runtime({ nodeId: 'survivor', flows });
        expect(await survivor.recover()).toEqual([]);
        expect(await survivor.wakeDue()).toEqual([parentId]);
        expect(await survivor.attach(parentId).result()).toBe(3);
      });

      it('cancelling a parent cancels its running child', async () => {
        const child: Flow<null, string> = {
          name: 'sleepy-child',
          run: async (ctx) => {
            await ctx.sleep(60_000);
            return 'never';
          },
        };
        const parent: Flow<null, JsonValue> = {
          name: 'waiting-parent',
          run: async (ctx) => ctx.child(child, null),
        };
        const node = runtime({
          flows: [parent as Flow<never, unknown>, child as Flow<never, unknown>],
        });
        const handle = await node.start(parent, null, { executionId: freshId('cancel-parent') });
        const childId = `${handle.executionId}.0`;
        await wait(async () => (await statusOf(childId)) === 'suspended', 'child suspension');
        await wait(
          async () => (await statusOf(handle.executionId)) === 'suspended',
          'parent suspension',
        );
        expect(await node.cancel(handle.executionId, 'stop all')).toBe(true);
        expect(await codeOf(node.attach(childId).result())).toBe(ErrorCode.EXECUTION_CANCELLED);
        expect(await codeOf(handle.result())).toBe(ErrorCode.EXECUTION_CANCELLED);
      });

      it('continue-as-new starts a linked successor with a fresh log; result() follows the chain', async () => {
        const counter: Flow<number, number> = {
          name: 'counter',
          run: async (ctx, n) => {
            const next = await ctx.step(`add-${n}`, () => n + 1);
            if (next < 3) return ctx.continueAsNew(next);
            return next;
          },
        };
        const node = runtime({ flows: [counter as Flow<never, unknown>] });
        const id = freshId('can');
        const handle = await node.start(counter, 0, { executionId: id });
        expect(await handle.result()).toBe(3);
        expect(await typesOf(id)).toEqual([
          'execution.started',
          'step.started',
          'step.completed',
          'execution.continued_as_new',
        ]);
        const first = await harness.store.read(id);
        expect(first[3]?.payload).toEqual({ successorId: `${id}#1` });
        const second = await harness.store.read(`${id}#1`);
        expect(second[0]?.payload).toMatchObject({
          continuedFrom: id,
          rootId: id,
          generation: 1,
          input: 1,
        });
        const third = await harness.store.read(`${id}#2`);
        expect(third[third.length - 1]?.type).toBe('execution.completed');
      });
    });

    section('snapshots', () => {
      // Whether the snapshot store reads the snapshot and the tail together through this store.
      let paired = true;
      // biome-ignore lint/suspicious/noDuplicateTestHooks: section() is this section's own describe block
      beforeEach(() => {
        paired = harness.snapshotsPaired !== false;
      });

      it('loadState of a 1,000-event execution reads the snapshot and one short tail', async () => {
        const created = runtime({ snapshots: harness.snapshots, snapshotEvery: 100 });
        const flow: Flow<null, number> = {
          name: 'long-log',
          run: async (ctx) => {
            let sum = 0;
            for (let index = 0; index < 499; index++)
              sum += await ctx.step(`s-${index}`, () => index);
            return sum;
          },
        };
        const handle = await created.start(flow, null);
        expect(await handle.result()).toBe((498 * 499) / 2);
        await created.idle();
        expect(await harness.countRows(handle.executionId)).toBe(1_000);
        const loaded = await loadState(harness.store, harness.snapshots, handle.executionId);
        const snapshotSequence = loaded.snapshotSequence as number;
        expect(snapshotSequence).toBeGreaterThanOrEqual(900);
        // The snapshot and the short tail after it come back in one combined call (two calls
        // through a decorator the snapshot store cannot read through).
        expect(loaded.reads).toBe(paired ? 1 : 2);
        expect(loaded.eventsRead).toBe(999 - snapshotSequence);
        expect(loaded.state?.status).toBe('completed');
        const full = await loadState(harness.store, undefined, handle.executionId);
        expect(full.eventsRead).toBe(1_000);
        expect(loaded.state).toEqual(full.state);
      });

      /** Counting views of the harness's stores; the snapshot view sees through the event one. */
      function countingStores() {
        const events = new CountingEventStore(harness.store);
        const snapshots = new CountingSnapshotStore(harness.snapshots, (store) =>
          store === events ? harness.store : store,
        );
        return { events, snapshots };
      }

      it('loadState of a short execution is one store call: no snapshot lookup before the read', async () => {
        const created = runtime({ snapshots: harness.snapshots, snapshotEvery: 50 });
        const flow: Flow<null, number> = {
          name: 'short-log',
          run: async (ctx) => ctx.step('only', () => 7),
        };
        const handle = await created.start(flow, null);
        expect(await handle.result()).toBe(7);
        await created.idle();
        const { events, snapshots } = countingStores();
        const loaded = await loadState(events, snapshots, handle.executionId);
        expect(snapshots.counts).toEqual({
          saves: 0,
          loads: paired ? 0 : 1,
          loadsWithTail: paired ? 1 : 0,
        });
        expect(events.counts.reads).toBe(paired ? 0 : 1);
        expect(loaded.reads).toBe(paired ? 1 : 2);
        expect(loaded.snapshotSequence).toBeUndefined();
        expect(loaded.eventsRead).toBe(4);
        const full = await loadState(harness.store, undefined, handle.executionId);
        expect(loaded.state).toEqual(full.state);
        expect(loaded.state?.status).toBe('completed');
      });

      it('loadState of a long execution is one store call: the snapshot and its tail together', async () => {
        const created = runtime({ snapshots: harness.snapshots, snapshotEvery: 40 });
        const flow: Flow<null, number> = {
          name: 'long-log-counted',
          run: async (ctx) => {
            let sum = 0;
            for (let index = 0; index < 60; index++)
              sum += await ctx.step(`s-${index}`, () => index);
            return sum;
          },
        };
        const handle = await created.start(flow, null);
        expect(await handle.result()).toBe((59 * 60) / 2);
        await created.idle();
        const { events, snapshots } = countingStores();
        const loaded = await loadState(events, snapshots, handle.executionId);
        expect(snapshots.counts).toEqual({
          saves: 0,
          loads: paired ? 0 : 1,
          loadsWithTail: paired ? 1 : 0,
        });
        expect(events.counts.reads).toBe(paired ? 0 : 1);
        const snapshotSequence = loaded.snapshotSequence as number;
        expect(snapshotSequence).toBeGreaterThanOrEqual(80);
        expect(loaded.eventsRead).toBe(121 - snapshotSequence);
        const full = await loadState(harness.store, undefined, handle.executionId);
        expect(full.eventsRead).toBe(122);
        expect(loaded.state).toEqual(full.state);
      });

      it('loadState through stores that cannot read together: the snapshot, then the tail', async () => {
        const created = runtime({ snapshots: harness.snapshots, snapshotEvery: 40 });
        const flow: Flow<null, number> = {
          name: 'unpaired-log',
          run: async (ctx) => {
            let sum = 0;
            for (let index = 0; index < 60; index++)
              sum += await ctx.step(`s-${index}`, () => index);
            return sum;
          },
        };
        const handle = await created.start(flow, null);
        await handle.result();
        await created.idle();
        // No viewOf: the inner store sees a CountingEventStore, not its own table, and declines.
        const events = new CountingEventStore(harness.store);
        const snapshots = new CountingSnapshotStore(harness.snapshots);
        const loaded = await loadState(events, snapshots, handle.executionId);
        expect(snapshots.counts).toEqual({ saves: 0, loads: 1, loadsWithTail: 0 });
        expect(events.counts.reads).toBe(1);
        expect(loaded.reads).toBe(2);
        const full = await loadState(harness.store, undefined, handle.executionId);
        expect(loaded.state).toEqual(full.state);
        expect(loaded.snapshotSequence).toBeGreaterThanOrEqual(80);
      });

      it('a resume of a 10,001-event history reads it in two pages once, then only the snapshot and its tail', async () => {
        // Counts the events each read returns, not only the calls (issue 14: history growth).
        class EventCounting extends CountingEventStore {
          eventsRead = 0;
          override async read(executionId: string, options?: Parameters<EventStore['read']>[1]) {
            const events = await super.read(executionId, options);
            this.eventsRead += events.length;
            return events;
          }
        }
        const steps = Limits.readLimitMax / 2; // execution.started + 2 per step: 10,001 events
        const flow: Flow<null, number> = {
          name: 'long-history',
          run: async (ctx) => {
            let sum = 0;
            for (let index = 0; index < steps; index++)
              sum += await ctx.step(`s-${index}`, () => index);
            await ctx.waitForSignal('go');
            return sum;
          },
        };
        // The history is written straight to the store (a crashed run's log), in full appends.
        const id = freshId('long-history');
        const log: EventEnvelope[] = [
          {
            executionId: id,
            sequence: 0,
            type: 'execution.started',
            payload: { flow: flow.name, version: null, input: null },
          },
        ];
        for (let index = 0; index < steps; index++) {
          const name = `s-${index}`;
          log.push(
            {
              executionId: id,
              sequence: 1 + 2 * index,
              type: 'step.started',
              payload: { index, name },
            },
            {
              executionId: id,
              sequence: 2 + 2 * index,
              type: 'step.completed',
              payload: { index, name, result: index },
            },
          );
        }
        for (let from = 0; from < log.length; from += Limits.eventsPerAppendMax)
          await harness.store.append(log.slice(from, from + Limits.eventsPerAppendMax));
        expect(log).toHaveLength(Limits.readLimitMax + 1);

        const stores = () => {
          const events = new EventCounting(harness.store);
          // Unpaired (no viewOf): every event read goes through the counting store.
          return { events, snapshots: new CountingSnapshotStore(harness.snapshots) };
        };
        const first = stores();
        const replaying = runtime({
          store: first.events,
          snapshots: first.snapshots,
          snapshotEvery: 1_000,
          inlineWaitMs: 0,
          flows: [flow as Flow<never, unknown>],
        });
        const replayed = await replaying.resume(id);
        let failure: unknown;
        replayed.result().catch((error: unknown) => {
          failure = error;
        });
        // Real time, not the harness's 2.5 s: replaying 5,000 steps takes a while on a loaded box.
        const last = async () =>
          (await harness.store.read(id, { fromSequence: log.length })).at(-1);
        for (let waitedMs = 0; (await last())?.type !== 'execution.suspended'; waitedMs += 10) {
          if (failure !== undefined) throw failure;
          if (waitedMs > 60_000) throw new Error('the replay did not suspend within 60 s');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        await replaying.idle();
        // No snapshot yet: the whole history, in pages of readLimitMax (10,000 + 1).
        expect(first.snapshots.counts.loads).toBeGreaterThanOrEqual(1);
        expect(first.events.counts.reads).toBeGreaterThanOrEqual(2);
        expect(first.events.eventsRead).toBeGreaterThanOrEqual(Limits.readLimitMax + 1);
        // The suspension left a snapshot near the tip (the settle-time checkpoint).
        expect(first.snapshots.counts.saves).toBeGreaterThanOrEqual(1);
        await replaying.shutdown();

        const second = stores();
        const resumed = runtime({
          store: second.events,
          snapshots: second.snapshots,
          snapshotEvery: 1_000,
          flows: [flow as Flow<never, unknown>],
        });
        await resumed.signal(id, 'go', null);
        const handle = await resumed.resume<number>(id);
        expect(await handle.result()).toBe(((steps - 1) * steps) / 2);
        // The snapshot and a tail of a few events, however long the history.
        const total = await harness.countRows(id);
        expect(total).toBeGreaterThan(Limits.readLimitMax + 3);
        expect(second.snapshots.counts.loads).toBeGreaterThanOrEqual(1);
        expect(second.events.eventsRead).toBeLessThanOrEqual(10 * second.snapshots.counts.loads);
      });

      it('a combined snapshot read with a limit out of range is INVALID_ARGUMENT', async () => {
        const code = async (limit: number) => {
          try {
            await harness.snapshots.loadWithTail?.(harness.store, freshId('limit'), limit);
            return 'resolved';
          } catch (error) {
            return (error as LoomError).code;
          }
        };
        if (harness.snapshots.loadWithTail === undefined) return;
        expect(await code(0)).toBe(ErrorCode.INVALID_ARGUMENT);
        expect(await code(Limits.readLimitMax + 1)).toBe(ErrorCode.INVALID_ARGUMENT);
        expect(await code(1)).toBe('resolved');
      });

      it('a resume from a snapshot mid-run replays the rest exactly', async () => {
        const hang = deferred();
        let lateRuns = 0;
        const flow: Flow<null, JsonValue> = {
          name: 'snap-resume',
          run: async (ctx) => {
            const values: number[] = [];
            for (let index = 0; index < 30; index++)
              values.push(await ctx.step(`s-${index}`, () => index));
            values.push(
              await ctx.step('late', async () => {
                lateRuns += 1;
                if (lateRuns === 1) await hang.promise;
                return -0;
              }),
            );
            return values;
          },
        };
        const first = runtime({ nodeId: 'first', snapshots: harness.snapshots, snapshotEvery: 10 });
        const handle = await first.start(flow, null);
        await until(async () => lateRuns > 0, 'lateRuns > 0');
        await first.idle();
        const second = runtime({
          nodeId: 'second',
          snapshots: harness.snapshots,
          snapshotEvery: 10,
          flows: [flow as Flow<never, unknown>],
        });
        const resumed = await second.resume<number[]>(handle.executionId);
        const values = await resumed.result();
        expect(values).toEqual([...Array.from({ length: 30 }, (_, index) => index), -0]);
        expect(Object.is(values[30], -0)).toBe(true);
        hang.resolve();
      });
    });

    section('ill-formed text at the runtime edges', () => {
      for (const [what, bad, position] of illFormedTexts) {
        it(`${what} in an id, a flow, a signal or a node id is refused before anything is written`, async () => {
          const created = runtime();
          const envelope = ErrorCode.INVALID_ENVELOPE;
          const flow = stepsFlow('text', 1);
          await expectIllFormed(
            created.start(flow, { tag: 't' }, { executionId: bad }),
            envelope,
            'executionId',
            position,
          );
          for (const call of [
            () => created.resume(bad),
            () => created.status(bad),
            () => created.cancel(bad, 'why'),
            async () => created.attach(bad),
          ]) {
            await expectIllFormed(call(), envelope, 'executionId', position);
          }
          await expectIllFormed(
            created.start({ ...flow, name: bad }, { tag: 't' }),
            ErrorCode.INVALID_FLOW,
            'name',
            position,
          );
          await expectIllFormed(
            created.start({ ...flow, version: bad }, { tag: 't' }),
            ErrorCode.INVALID_FLOW,
            'version',
            position,
          );
          // The execution index, not readAll: on Postgres readAll may lag an open transaction
          // elsewhere, which would hide a row this test must see.
          expect(await harness.store.findExecutions({ status: 'running' })).toEqual([]);
          expect(await harness.store.findExecutions({ status: 'settled' })).toEqual([]);
          await expectIllFormed(
            (async () => runtime({ nodeId: bad }))(),
            ErrorCode.INVALID_ARGUMENT,
            'nodeId',
            position,
          );
          const handle = await created.start(stepsFlow('text', 0), { tag: 't' });
          await handle.result();
          await expectIllFormed(
            created.signal(handle.executionId, bad, null),
            envelope,
            'name',
            position,
          );
          await expectIllFormed(
            created.signal(handle.executionId, 'go', null, { idempotencyKey: bad }),
            envelope,
            'idempotencyKey',
            position,
          );
          expect(await harness.store.readSignals(handle.executionId)).toEqual([]);
        });

        it(`${what} in a step, timer, signal-wait or patch name fails the execution with INVALID_STEP_NAME`, async () => {
          const created = runtime();
          const uses: Array<(ctx: Parameters<Flow['run']>[0]) => Promise<unknown>> = [
            (ctx) => ctx.step(bad, () => 1),
            (ctx) => ctx.sleep(1, bad),
            (ctx) => ctx.waitForSignal(bad),
            async (ctx) => ctx.patched(bad),
          ];
          for (const use of uses) {
            const handle = await created.start({ name: 'bad-name', run: use }, null);
            const error = (await handle.result().catch((caught) => caught)) as LoomError;
            expect(thrownCode(error)).toBe(ErrorCode.INVALID_STEP_NAME);
            expect(error.fields.position).toBe(position);
            const events = await harness.store.read(handle.executionId);
            expect(events.map((event) => event.type)).toEqual([
              'execution.started',
              'execution.failed',
            ]);
          }
        });
      }
    });

    section('flow registry keys', () => {
      it("a flow named 'reg@1' and flow 'reg' version '1' each resume with their own code", async () => {
        const napper = (tag: string, extra: { version?: string } = {}) =>
          ({
            name: tag === 'plain' ? 'reg@1' : 'reg',
            ...extra,
            run: async (ctx: Parameters<Flow['run']>[0]) => {
              await ctx.sleep(1_000, 'nap');
              return ctx.step('which', () => tag);
            },
          }) as Flow<null, string>;
        const plain = napper('plain');
        const versioned = napper('versioned', { version: '1' });
        const created = runtime({ flows: [plain, versioned] as Flow<never, unknown>[] });
        const plainHandle = await created.start(plain, null);
        const versionedHandle = await created.start(versioned, null);
        await until(
          async () => (await harness.store.findExecutions({ status: 'suspended' })).length === 2,
          'both to suspend',
        );
        await harness.clock.advance(1_000);
        expect((await created.wakeDue()).sort()).toEqual(
          [plainHandle.executionId, versionedHandle.executionId].sort(),
        );
        expect(await plainHandle.result()).toBe('plain');
        expect(await versionedHandle.result()).toBe('versioned');
      });
    });

    section('cancel without a reason', () => {
      const hanging = (): Flow<null, string> => ({
        name: 'hangs',
        run: async (ctx) =>
          ctx.step(
            'hang',
            (effect) =>
              new Promise<string>((_, reject) =>
                effect.signal.addEventListener('abort', () => reject(new Error('aborted'))),
              ),
          ),
      });
      const startHanging = async (created: KernelRuntime) => {
        const handle = await created.start(hanging(), null);
        await until(async () => (await harness.countRows(handle.executionId)) >= 2, 'step start');
        return handle;
      };
      const reasonOf = async (executionId: string) => {
        const events = await harness.store.read(executionId);
        const last = events[events.length - 1];
        expect(last?.type).toBe('execution.cancelled');
        return (last?.payload as { reason?: unknown } | undefined)?.reason;
      };

      it('a local cancel without a reason records a default one', async () => {
        const created = runtime();
        const handle = await startHanging(created);
        expect(await created.cancel(handle.executionId)).toBe(true);
        const error = (await handle.result().catch((caught) => caught)) as LoomError;
        expect(error.code).toBe(ErrorCode.EXECUTION_CANCELLED);
        expect(await reasonOf(handle.executionId)).toBe('cancelled without a reason');
      });

      it('a remote cancel without a reason records a default one', async () => {
        const owner = runtime({ nodeId: 'owner' });
        const handle = await startHanging(owner);
        const operator = runtime({ nodeId: 'operator' });
        expect(await operator.cancel(handle.executionId)).toBe(true);
        expect(await codeOf(operator.attach(handle.executionId).result())).toBe(
          ErrorCode.EXECUTION_CANCELLED,
        );
        expect(await reasonOf(handle.executionId)).toBe('cancelled without a reason');
        await owner.cancel(handle.executionId);
      });

      it('a reason that is not a string is INVALID_ARGUMENT and cancels nothing', async () => {
        const created = runtime();
        const handle = await startHanging(created);
        expect(await codeOf(created.cancel(handle.executionId, 7 as never))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
        expect(await harness.countRows(handle.executionId)).toBe(2);
        expect(await created.cancel(handle.executionId, 'now')).toBe(true);
      });

      it('a reason too long for the cancelled event is LIMIT_EXCEEDED and the execution can still be cancelled', async () => {
        const created = runtime();
        const handle = await startHanging(created);
        const huge = 'x'.repeat(Limits.payloadBytesMax + 1);
        const refused = (await created
          .cancel(handle.executionId, huge)
          .catch((e) => e)) as LoomError;
        expect(refused.code).toBe(ErrorCode.LIMIT_EXCEEDED);
        expect(refused.fields.limit).toBe('cancelReasonLengthMax');
        expect(await harness.countRows(handle.executionId)).toBe(2);
        expect(await created.cancel(handle.executionId, 'now')).toBe(true);
        expect(await reasonOf(handle.executionId)).toBe('now');
      });
    });

    section('lease batches', () => {
      it('a node holding leaseBatchMax + 1 leases acquires and renews them in 2 calls each, losing none', async () => {
        const lost: string[] = [];
        const errors: unknown[] = [];
        const manager = new LeaseManager({
          store: harness.leases,
          nodeId: 'many',
          clock: harness.clock,
          ttlMs: 30_000,
          renewEveryMs: 10_000,
          lazyGraceMs: 10_000,
          events: new RuntimeEvents(() => undefined),
          onLost: (ids) => lost.push(...ids),
          onError: (error) => errors.push(error),
        });
        const base = freshId('many');
        const ids = Array.from({ length: Limits.leaseBatchMax + 1 }, (_, i) => `${base}-${i}`);
        const granted = await Promise.all(ids.map((id) => manager.acquire(id)));
        expect(granted.every((ok) => ok)).toBe(true);
        expect(manager.calls.acquireMany).toBe(2);
        await harness.clock.advance(20_000);
        await manager.tick();
        expect(errors).toEqual([]);
        expect(lost).toEqual([]);
        expect(manager.calls.renewMany).toBe(2);
        for (const id of [ids[0], ids[ids.length - 1]] as string[]) {
          expect(await harness.leases.get(id)).toMatchObject({
            owner: 'many',
            expiresAtMs: harness.clock.now() + 30_000,
          });
        }
        await manager.shutdown();
        expect(manager.calls.releaseMany).toBe(2);
        expect(await harness.leases.get(ids[0] as string)).toBeUndefined();
      });

      it('a release while its acquire is in flight wins: the lease is given back, never renewed', async () => {
        const errors: unknown[] = [];
        const manager = new LeaseManager({
          store: harness.leases,
          nodeId: 'fickle',
          clock: harness.clock,
          ttlMs: 30_000,
          renewEveryMs: 10_000,
          lazyGraceMs: 10_000,
          events: new RuntimeEvents(() => undefined),
          onLost: () => undefined,
          onError: (error) => errors.push(error),
        });
        const id = freshId('fickle');
        const acquired = manager.acquire(id);
        // The acquire is batched to the next turn: the release arrives while it is in flight.
        manager.release(id);
        expect(await acquired).toBe(false);
        expect(manager.holds(id)).toBe(false);
        await manager.tick();
        expect(await harness.leases.get(id)).toBeUndefined();
        await harness.clock.advance(20_000);
        await manager.tick();
        expect(manager.calls.renewMany).toBe(0);
        expect(await harness.leases.get(id)).toBeUndefined();
        // Acquiring it again afterwards works as usual.
        expect(await manager.acquire(id)).toBe(true);
        expect(manager.holds(id)).toBe(true);
        await manager.shutdown();
        expect(errors).toEqual([]);
      });

      it('an acquire while the release of the same lease is in flight keeps the lease: the release lands first', async () => {
        // A suspended execution's lease is released with the next tick; a timer wakes it on this
        // node during that tick. The release's delete must not land after the wake's acquire, or
        // the renewal that follows finds the lease gone and stops the driver (a cron fire lost).
        let releasesSent = 0;
        let letReleasesGo = () => {};
        const releasesGo = new Promise<void>((resolve) => {
          letReleasesGo = resolve;
        });
        const acquires: Array<Promise<unknown>> = [];
        const leases: LeaseStore = {
          acquireMany: (...args) => {
            const call = harness.leases.acquireMany(...args);
            acquires.push(call.catch(() => undefined));
            return call;
          },
          renewMany: (...args) => harness.leases.renewMany(...args),
          // Held until the test lets it go, then sent after every acquire already sent: the
          // order in which an unordered pair of calls can reach the store.
          releaseMany: async (...args) => {
            releasesSent += 1;
            await releasesGo;
            await Promise.all(acquires);
            return harness.leases.releaseMany(...args);
          },
          get: (id) => harness.leases.get(id),
          claimNode: (id) => harness.leases.claimNode(id),
          liveNodes: (ids) => harness.leases.liveNodes(ids),
          countLiveNodes: () => harness.leases.countLiveNodes(),
          close: async () => undefined,
        };
        const lost: string[] = [];
        const errors: unknown[] = [];
        const manager = new LeaseManager({
          store: leases,
          nodeId: 'rewoken',
          clock: harness.clock,
          ttlMs: 30_000,
          renewEveryMs: 10_000,
          lazyGraceMs: 10_000,
          events: new RuntimeEvents(() => undefined),
          onLost: (ids) => lost.push(...ids),
          onError: (error) => errors.push(error),
        });
        const id = freshId('rewoken');
        expect(await manager.acquire(id)).toBe(true);
        manager.release(id);
        const flushed = manager.tick();
        await until(async () => releasesSent === 1, 'the tick sending the release');
        const again = manager.acquire(id);
        // Two turns: an acquire sent at once (batched to the next turn) has reached the store.
        for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
        letReleasesGo();
        await flushed;
        expect(await again).toBe(true);
        expect(await harness.leases.get(id)).toMatchObject({ owner: 'rewoken' });
        await harness.clock.advance(20_000);
        await manager.tick();
        expect(lost).toEqual([]);
        expect(manager.holds(id)).toBe(true);
        await manager.shutdown();
        expect(errors).toEqual([]);
      });

      it('a release of a lease whose acquire waits for the release in flight wins', async () => {
        let releasesSent = 0;
        let letReleasesGo = () => {};
        const releasesGo = new Promise<void>((resolve) => {
          letReleasesGo = resolve;
        });
        const leases: LeaseStore = {
          acquireMany: (...args) => harness.leases.acquireMany(...args),
          renewMany: (...args) => harness.leases.renewMany(...args),
          releaseMany: async (...args) => {
            releasesSent += 1;
            await releasesGo;
            return harness.leases.releaseMany(...args);
          },
          get: (id) => harness.leases.get(id),
          claimNode: (id) => harness.leases.claimNode(id),
          liveNodes: (ids) => harness.leases.liveNodes(ids),
          countLiveNodes: () => harness.leases.countLiveNodes(),
          close: async () => undefined,
        };
        const manager = new LeaseManager({
          store: leases,
          nodeId: 'regretful',
          clock: harness.clock,
          ttlMs: 30_000,
          renewEveryMs: 10_000,
          lazyGraceMs: 10_000,
          events: new RuntimeEvents(() => undefined),
          onLost: () => undefined,
          onError: () => undefined,
        });
        const id = freshId('regretful');
        expect(await manager.acquire(id)).toBe(true);
        manager.release(id);
        const flushed = manager.tick();
        await until(async () => releasesSent === 1, 'the tick sending the release');
        const again = manager.acquire(id);
        manager.release(id);
        letReleasesGo();
        await flushed;
        expect(await again).toBe(false);
        expect(manager.holds(id)).toBe(false);
        expect(await harness.leases.get(id)).toBeUndefined();
        await manager.shutdown();
      });

      const hangingFlow = (hang: Promise<void>): Flow<null, string> => ({
        name: 'batch-recover',
        run: async (ctx) => {
          await ctx.step('hang', () => hang.then(() => 1));
          return 'done';
        },
      });

      it('recovering 5 executions takes their leases in one acquireMany', async () => {
        const hang = deferred();
        const flow = hangingFlow(hang.promise);
        const dead = runtime({
          nodeId: 'dead',
          leases: harness.leases,
          leaseMode: 'eager',
          leaseTtlMs: 3_000,
          // A dead node renews nothing: its renewal would come long after its leases expired.
          renewEveryMs: 60_000,
        });
        const handles = await Promise.all(Array.from({ length: 5 }, () => dead.start(flow, null)));
        for (const handle of handles) {
          await until(async () => (await harness.countRows(handle.executionId)) >= 2, 'step start');
        }
        await harness.clock.advance(3_001);
        const rescuer = runtime({
          nodeId: 'rescuer',
          leases: harness.leases,
          flows: [flow as Flow<never, unknown>],
        });
        const recovered = await rescuer.recover();
        expect(recovered.sort()).toEqual(handles.map((handle) => handle.executionId).sort());
        expect(leaseCalls(rescuer).acquireMany).toBe(1);
        for (const handle of handles) {
          expect((await harness.leases.get(handle.executionId))?.owner).toBe('rescuer');
        }
        expect(await rescuer.recover()).toEqual([]);
        expect(leaseCalls(rescuer).acquireMany).toBe(1);
        hang.resolve();
        for (const handle of handles) {
          expect(await rescuer.attach(handle.executionId).result()).toBe('done');
        }
      });

      it('waking 5 due executions takes their leases in one acquireMany', async () => {
        const sleeper: Flow<null, string> = {
          name: 'batch-wake',
          run: async (ctx) => {
            await ctx.sleep(1_000);
            return ctx.step('after', () => 'woke');
          },
        };
        const first = runtime({ nodeId: 'first' });
        const handles = await Promise.all(
          Array.from({ length: 5 }, () => first.start(sleeper, null)),
        );
        await until(
          async () => (await harness.store.findExecutions({ status: 'suspended' })).length === 5,
          'all to suspend',
        );
        await harness.clock.advance(1_000);
        const waker = runtime({
          nodeId: 'waker',
          leases: harness.leases,
          flows: [sleeper as Flow<never, unknown>],
        });
        expect((await waker.wakeDue()).length).toBe(5);
        expect(leaseCalls(waker).acquireMany).toBe(1);
        for (const handle of handles) expect(await handle.result()).toBe('woke');
      });
    });

    section('durations judged by the runtime clock', () => {
      it('a sleep works when the injected clock is far from the wall clock', async () => {
        await harness.clock.advance(200 * 365 * 24 * 3_600_000);
        const created = runtime();
        const flow: Flow<null, string> = {
          name: 'far-future',
          run: async (ctx) => {
            await ctx.sleep(1_000);
            return 'woke';
          },
        };
        const handle = await created.start(flow, null);
        await until(
          async () => (await harness.store.findExecutions({ status: 'suspended' })).length === 1,
          'suspension',
        );
        await harness.clock.advance(1_000);
        expect(await created.wakeDue()).toEqual([handle.executionId]);
        expect(await handle.result()).toBe('woke');
      });

      it('a duration over 100 years is INVALID_ARGUMENT whatever the wall clock says', async () => {
        const created = runtime();
        const flow: Flow<null, string> = {
          name: 'too-long',
          run: async (ctx) => {
            await ctx.sleep(101 * 365 * 24 * 3_600_000);
            return 'woke';
          },
        };
        const handle = await created.start(flow, null);
        await until(
          async () => (await created.status(handle.executionId)) !== 'running',
          'the sleep to fail or suspend',
        );
        expect(await created.status(handle.executionId)).toBe('failed');
        expect(await thrownCodeOf(handle.result())).toBe(ErrorCode.INVALID_ARGUMENT);
      });
    });

    section(
      'recorded values: limits, first run equals replay, closed contexts, hostile throws',
      () => {
        /** Settles with `promise`, or rejects once `ms` passed: a wedged execution fails the test. */
        const within = <T>(promise: Promise<T>, what: string, ms = 5_000): Promise<T> =>
          Promise.race([
            promise,
            new Promise<T>((_, reject) => {
              const timer = setTimeout(() => reject(new Error(`${what} did not settle`)), ms);
              void promise.finally(() => clearTimeout(timer)).catch(() => undefined);
            }),
          ]);
        const failureOf = async (promise: Promise<unknown>, what: string) =>
          (await within(promise, what).then(
            () => new Error(`${what} resolved`),
            (caught) => caught,
          )) as LoomError;
        const wait = until;
        const suspended = async (id: string) =>
          (await harness.store.findExecutions({ status: 'suspended' })).some(
            (summary) => summary.executionId === id,
          );
        const lastType = async (id: string) => {
          const events = await harness.store.read(id);
          return events[events.length - 1]?.type;
        };
        /** A string of JSON text `bytes` long (quotes included). */
        const jsonString = (bytes: number) => 'x'.repeat(bytes - 2);

        it('a step result that fits alone but not in its event fails the step with LIMIT_EXCEEDED naming step and size', async () => {
          const errors: unknown[] = [];
          const created = runtime({ onError: (error) => errors.push(error) });
          let runs = 0;
          const flow: Flow<null, JsonValue> = {
            name: 'big-result',
            run: async (ctx) => {
              try {
                await ctx.step('big', () => {
                  runs += 1;
                  return jsonString(Limits.payloadBytesMax - 10);
                });
                return 'stored';
              } catch (error) {
                const failure = error as LoomError;
                return {
                  code: failure.code,
                  inner: (failure.fields.error as { code: string }).code,
                };
              }
            },
          };
          const handle = await created.start(flow, null, { executionId: freshId('big-result') });
          expect(await within(handle.result(), 'result()')).toEqual({
            code: ErrorCode.STEP_FAILED,
            inner: ErrorCode.LIMIT_EXCEEDED,
          });
          const events = await harness.store.read(handle.executionId);
          expect(events.map((event) => event.type)).toEqual([
            'execution.started',
            'step.started',
            'step.failed',
            'execution.completed',
          ]);
          const recorded = (events[2]?.payload as { error: { message: string; fields: JsonValue } })
            ?.error as { message: string; fields: JsonValue };
          expect(recorded.message).toMatch(/step 'big'/);
          expect(recorded.message).toMatch(/\d+ bytes, over payloadBytesMax \(1048576\)/);
          expect(recorded.fields).toMatchObject({ limit: 'payloadBytesMax', step: 'big' });
          expect(runs).toBe(1);
          expect(errors).toEqual([]);
        });

        it('a flow output over payloadBytesMax fails the execution with the same LIMIT_EXCEEDED with or without steps', async () => {
          const created = runtime();
          const big = jsonString(Limits.payloadBytesMax - 5);
          const bare: Flow<null, string> = { name: 'big-output-bare', run: async () => big };
          const stepped: Flow<null, string> = {
            name: 'big-output-stepped',
            run: async (ctx) => {
              await ctx.step('first', () => 1);
              return big;
            },
          };
          const messages: string[] = [];
          for (const flow of [bare, stepped]) {
            const id = freshId('big-output');
            const started = created.start(flow, null, { executionId: id });
            const handle = await within(started, 'start()');
            const error = await failureOf(handle.result(), 'result()');
            expect(thrownCode(error)).toBe(ErrorCode.LIMIT_EXCEEDED);
            expect(await lastType(id)).toBe('execution.failed');
            messages.push(error.message.replaceAll(id, '<id>'));
          }
          expect(messages[0]).toMatch(
            /output of execution <id> is \d+ bytes, over payloadBytesMax/,
          );
          expect(messages[1]).toBe(messages[0]);
        });

        it('a transactional step result over payloadBytesMax rolls back and fails the step', async () => {
          if (!isTransactional(harness.store)) return;
          const created = runtime();
          const flow: Flow<null, string> = {
            name: 'big-transaction',
            run: async (ctx) => {
              try {
                await ctx.transaction('big-tx', () => jsonString(Limits.payloadBytesMax - 10));
                return 'stored';
              } catch (error) {
                return (error as LoomError).code;
              }
            },
          };
          const handle = await created.start(flow, null, { executionId: freshId('big-tx') });
          expect(await within(handle.result(), 'result()')).toBe(ErrorCode.STEP_FAILED);
          expect((await harness.store.read(handle.executionId)).map((event) => event.type)).toEqual(
            ['execution.started', 'step.started', 'step.failed', 'execution.completed'],
          );
        });

        it('a signal that fits the inbox but not the wait that receives it fails the wait with LIMIT_EXCEEDED', async () => {
          const created = runtime();
          const flow: Flow<null, JsonValue> = {
            name: 'big-signal',
            run: async (ctx) => {
              try {
                await ctx.waitForSignal('blob');
                return 'received';
              } catch (error) {
                return (error as LoomError).code;
              }
            },
          };
          const id = freshId('big-signal');
          const handle = await created.start(flow, null, { executionId: id });
          await created.signal(id, 'blob', jsonString(Limits.payloadBytesMax - 20));
          await wait(
            async () => (await lastType(id)) !== 'signal.waiting' || (await suspended(id)),
            'the wait',
          );
          if (await suspended(id)) await created.wakeDue();
          expect(await within(handle.result(), 'result()')).toBe(ErrorCode.LIMIT_EXCEEDED);
        });

        it('child and continue-as-new inputs over payloadBytesMax fail with LIMIT_EXCEEDED, nothing wedges', async () => {
          const child: Flow<string, number> = { name: 'small-child', run: async () => 1 };
          const big = jsonString(Limits.payloadBytesMax);
          const parent: Flow<null, string> = {
            name: 'big-child-input',
            run: async (ctx) => {
              try {
                await ctx.child(child, big);
                return 'started';
              } catch (error) {
                return (error as LoomError).code;
              }
            },
          };
          const continuing: Flow<string, string> = {
            name: 'big-continue',
            run: async (ctx, input) => (input === 'go' ? ctx.continueAsNew(big) : 'continued'),
          };
          const created = runtime({
            flows: [child, parent, continuing] as Flow<never, unknown>[],
          });
          const first = await created.start(parent, null);
          expect(await within(first.result(), 'parent result()')).toBe(ErrorCode.LIMIT_EXCEEDED);
          const second = await created.start(continuing, 'go');
          expect(thrownCode(await failureOf(second.result(), 'continuing result()'))).toBe(
            ErrorCode.LIMIT_EXCEEDED,
          );
          expect(await harness.store.findExecutions({ status: 'running' })).toEqual([]);
        });

        it("a child output that fits the child's log but not the parent's event fails the child durably", async () => {
          const child: Flow<null, string> = {
            name: 'big-output-child',
            // {"output":<text>} is exactly payloadBytesMax: the child's own terminal fits.
            run: async () => jsonString(Limits.payloadBytesMax - '{"output":}'.length),
          };
          const parent: Flow<null, JsonValue> = {
            name: 'big-output-parent',
            run: async (ctx) => {
              try {
                await ctx.child(child, null);
                return 'received';
              } catch (error) {
                const failure = error as LoomError;
                return [failure.code, (failure.fields.error as { code: string }).code];
              }
            },
          };
          const created = runtime({
            timerPollMs: 5,
            flows: [child, parent] as Flow<never, unknown>[],
          });
          const handle = await created.start(parent, null, { executionId: freshId('big-child') });
          expect(await within(handle.result(), 'result()')).toEqual([
            ErrorCode.CHILD_FAILED,
            ErrorCode.LIMIT_EXCEEDED,
          ]);
          expect(await lastType(`${handle.executionId}.0`)).toBe('execution.completed');
        });

        it('the first run sees exactly the values its replay sees (steps, input, values, signals, children)', async () => {
          const shared = { x: 1 };
          const input = { tag: 'original' };
          const seen: string[] = [];
          const describeValue = (value: unknown): JsonValue =>
            value === undefined
              ? 'undefined'
              : {
                  json: JSON.stringify(value),
                  proto:
                    typeof value === 'object' && value !== null
                      ? Object.getPrototypeOf(value) === null
                        ? 'null'
                        : Array.isArray(value)
                          ? 'array'
                          : 'object'
                      : typeof value,
                  keys:
                    typeof value === 'object' && value !== null
                      ? Reflect.ownKeys(value).map(String)
                      : [],
                };
          const child: Flow<null, JsonValue> = {
            name: 'values-child',
            run: async () => ({ from: 'child' }),
          };
          const transactional = isTransactional(harness.store);
          const flow: Flow<{ tag: string }, string> = {
            name: 'same-values',
            run: async (ctx, flowInput) => {
              const before = describeValue(flowInput);
              const undef = await ctx.step('undefined', () => undefined);
              const object = await ctx.step('object', () => {
                // Changed after the step returned but before its append: the log keeps what was
                // returned, the value the flow saw.
                setImmediate(() => {
                  shared.x = 3;
                });
                return shared;
              });
              const array = await ctx.step('array', () => Object.assign([1, 2], { extra: 'e' }));
              const bare = await ctx.step('null-proto', () =>
                Object.assign(Object.create(null) as object, { k: 1 }),
              );
              const tx = transactional
                ? await ctx.transaction('tx', () => Object.assign([3], { extra: 'e' }))
                : null;
              const signal = await ctx.waitForSignal('note');
              const payload = signal.received ? signal.payload : null;
              const fromChild = await ctx.child(child, null);
              const values = [ctx.now(), ctx.random(), ctx.uuid()];
              const view = JSON.stringify({
                before,
                undef: describeValue(undef),
                object: describeValue(object),
                array: describeValue(array),
                bare: describeValue(bare),
                tx: describeValue(tx),
                payload: describeValue(payload),
                child: describeValue(fromChild),
                values,
              });
              // Mutate everything the flow was handed: none of it may reach the log.
              (payload as { n: number }).n = -1;
              (fromChild as { from: string }).from = 'mutated';
              (object as { x: number }).x = -1;
              await ctx.step('mutate', () => {
                shared.x = 2;
                input.tag = 'changed';
                return null;
              });
              const after = JSON.stringify([describeValue(object), describeValue(flowInput)]);
              seen.push(`${view} ${after}`);
              await ctx.sleep(1_000);
              return `${view} ${after}`;
            },
          };
          const node = runtime({ timerPollMs: 5, flows: [flow, child] as Flow<never, unknown>[] });
          const id = freshId('same-values');
          const handle = await node.start(flow, input, { executionId: id });
          await node.signal(id, 'note', { n: 1 });
          // The signal usually lands while the flow runs its first steps, but a slow round trip
          // (a shard's first connection on a loaded box) lets the flow suspend at its wait first.
          // The signal then makes it due, and only a timer poll wakes it: the 5 ms poll runs on the
          // harness clock, which stands still, so wake it here.
          await wait(async () => {
            if (seen.length === 0 && (await suspended(id))) await node.wakeDue();
            return seen.length === 1 && (await suspended(id));
          }, 'the first run');
          await harness.clock.advance(1_000);
          // The 5 ms poll runs on the harness clock; on a remote store the round that comes due
          // may be skipped while the one before it still waits for the database: wake it here.
          await node.wakeDue();
          const output = await within(handle.result(), 'result()');
          expect(seen).toHaveLength(2);
          expect(seen[1]).toBe(seen[0]);
          expect(output).toBe(seen[0]);
          const view = JSON.parse((seen[0] as string).split(' ')[0] as string) as Record<
            string,
            JsonValue
          >;
          expect(view.undef).toEqual(describeValue(null));
          expect(view.object).toEqual(describeValue({ x: 1 }));
          expect(view.array).toEqual(describeValue([1, 2]));
          expect(view.bare).toEqual(describeValue({ k: 1 }));
          expect(view.tx).toEqual(describeValue(transactional ? [3] : null));
          expect(view.payload).toEqual(describeValue({ n: 1 }));
          expect(view.child).toEqual(describeValue({ from: 'child' }));
          expect(view.before).toEqual(describeValue({ tag: 'original' }));
        });

        it('with snapshots, a flow that changes a replayed value does not change what later replays see', async () => {
          const seen: string[] = [];
          const flow: Flow<{ n: number }, string> = {
            name: 'mutates-replayed',
            run: async (ctx, input) => {
              const object = await ctx.step('object', () => ({ x: 1 }));
              const signal = await ctx.waitForSignal('note');
              seen.push(JSON.stringify([object, input, signal]));
              (object as { x: number }).x = -1;
              input.n = -1;
              for (const round of [1, 2]) await ctx.sleep(1_000, `sleep-${round}`);
              return 'done';
            },
          };
          const node = runtime({
            snapshots: harness.snapshots,
            snapshotEvery: 1,
            flows: [flow as Flow<never, unknown>],
          });
          const handle = await node.start(flow, { n: 1 }, { executionId: freshId('mutates') });
          await node.signal(handle.executionId, 'note', { s: 1 });
          // It suspends at each sleep (and perhaps at the signal wait): wake it each time, after the
          // suspension's snapshot is saved, so the next run starts from that snapshot.
          await wait(async () => {
            if (await suspended(handle.executionId)) {
              await node.idle();
              await harness.clock.advance(1_000);
              await node.wakeDue();
            }
            return (await lastType(handle.executionId)) === 'execution.completed';
          }, 'the execution to complete');
          expect(await within(handle.result(), 'result()')).toBe('done');
          // At least the first run and one replay per sleep; a poll round may add a spurious wake
          // (a replay that suspends again), which must see the same values too.
          expect(seen.length).toBeGreaterThanOrEqual(3);
          expect(new Set(seen)).toEqual(new Set([seen[0]]));
        });

        it('an operation on a context whose flow ended fails with CONTEXT_CLOSED before anything runs', async () => {
          let leaked: FlowContext | undefined;
          const flow: Flow<null, string> = {
            name: 'leaks-context',
            run: async (ctx) => {
              leaked = ctx;
              await ctx.step('inside', () => 1);
              return 'done';
            },
          };
          const created = runtime();
          const handle = await created.start(flow, null);
          expect(await handle.result()).toBe('done');
          const ctx = leaked as FlowContext;
          const rows = await harness.countRows(handle.executionId);
          let effects = 0;
          const effect = () => {
            effects += 1;
            return 1;
          };
          const other: Flow<null, number> = { name: 'never-started', run: async () => 1 };
          const operations: Array<[string, () => unknown]> = [
            ['step', () => ctx.step('late', effect)],
            ['transaction', () => ctx.transaction('late-tx', effect)],
            ['sleep', () => ctx.sleep(10)],
            ['sleepUntil', () => ctx.sleepUntil(harness.clock.now() + 10)],
            ['waitForSignal', () => ctx.waitForSignal('late')],
            ['child', () => ctx.child(other, null)],
            ['continueAsNew', () => ctx.continueAsNew(null)],
            ['now', () => ctx.now()],
            ['random', () => ctx.random()],
            ['uuid', () => ctx.uuid()],
            ['patched', () => ctx.patched('late')],
          ];
          for (const [what, call] of operations) {
            let code: string;
            try {
              const returned = call();
              code = returned instanceof Promise ? await codeOf(returned) : 'returned';
            } catch (error) {
              code = (error as LoomError).code;
            }
            expect(`${what}: ${code}`).toBe(`${what}: ${ErrorCode.CONTEXT_CLOSED}`);
          }
          expect(effects).toBe(0);
          expect(await harness.countRows(handle.executionId)).toBe(rows);
          expect(await harness.store.findExecutions({ status: 'running' })).toEqual([]);
        });

        it('a step the flow never awaited does not run its effect once the flow has returned', async () => {
          let effects = 0;
          const flow: Flow<null, string> = {
            name: 'forgets-await',
            run: async (ctx) => {
              void ctx.step('forgotten', () => {
                effects += 1;
                return 1;
              });
              return 'done';
            },
          };
          const created = runtime();
          const handle = await created.start(flow, null);
          // The step's barrier and the terminal share one append; its waiter is settled first, so
          // an effect that was going to run has been called by the time result() resolves.
          expect(await handle.result()).toBe('done');
          await created.idle();
          expect(effects).toBe(0);
          const types = (await harness.store.read(handle.executionId)).map((event) => event.type);
          expect(types[types.length - 1]).toBe('execution.completed');
        });

        const hostile: Array<[string, () => unknown]> = [
          [
            'an object whose toString throws',
            () => ({
              toString: () => {
                throw new Error('no');
              },
            }),
          ],
          [
            'an Error whose message, name and stack getters throw',
            () => {
              const error = new Error('hidden');
              for (const key of ['message', 'name', 'stack']) {
                Object.defineProperty(error, key, {
                  get: () => {
                    throw new Error(`${key} getter`);
                  },
                });
              }
              return error;
            },
          ],
          [
            'a Proxy that throws on every access',
            () =>
              new Proxy(
                {},
                {
                  get: () => {
                    throw new Error('get');
                  },
                  getPrototypeOf: () => {
                    throw new Error('getPrototypeOf');
                  },
                  has: () => {
                    throw new Error('has');
                  },
                  ownKeys: () => {
                    throw new Error('ownKeys');
                  },
                  getOwnPropertyDescriptor: () => {
                    throw new Error('descriptor');
                  },
                },
              ),
          ],
          [
            'a revoked Proxy',
            () => {
              const { proxy, revoke } = Proxy.revocable(new Error('revoked'), {});
              revoke();
              return proxy;
            },
          ],
          ['a Symbol', () => Symbol('thrown')],
        ];
        for (const [what, make] of hostile) {
          for (const where of ['a step', 'the flow body'] as const) {
            it(`${what} thrown from ${where} is recorded with a fixed description; result() settles`, async () => {
              const created = runtime();
              const flow: Flow<null, string> = {
                name: 'hostile-throw',
                run: async (ctx) => {
                  if (where === 'a step') {
                    await ctx.step('throws', () => {
                      throw make();
                    });
                  } else {
                    throw make();
                  }
                  return 'unreachable';
                },
              };
              const handle = await created.start(flow, null);
              const error = await failureOf(handle.result(), 'result()');
              expect(thrownCode(error)).toBe(
                where === 'a step' ? ErrorCode.STEP_FAILED : ErrorCode.EXECUTION_FAILED,
              );
              expect(typeof error.message).toBe('string');
              expect(await lastType(handle.executionId)).toBe('execution.failed');
              await within(created.shutdown(), 'shutdown()');
            });
          }
        }
      },
    );
  });
}
