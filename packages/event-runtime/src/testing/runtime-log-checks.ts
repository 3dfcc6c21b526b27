import { expect, it } from 'vitest';
import type { EventEnvelope, JsonValue } from '../envelope.js';
import { ErrorCode, isLoomError } from '../errors.js';
import { loadState } from '../runtime/load-state.js';
import type { KernelRuntime, KernelRuntimeOptions } from '../runtime/runtime.js';
import type { RuntimeSection, SectionDescribe } from './conformance-sections.js';
import { freshId } from './event-store-conformance.js';
import type { RuntimeHarness } from './runtime-harness.js';

const started = { flow: 'folded', version: null, input: null };

/** One event whose payload lacks the shape its type requires, and the field the error names. */
interface Malformed {
  what: string;
  /** The events after a well-formed `execution.started` (the last one is the bad one). */
  events: Array<{ type: string; payload: JsonValue }>;
  path: string;
}

const malformed: Malformed[] = [
  {
    what: 'a step.completed without its result',
    events: [
      { type: 'step.started', payload: { index: 0, name: 'charge' } },
      { type: 'step.completed', payload: { index: 0, name: 'charge' } },
    ],
    path: 'payload.result',
  },
  {
    what: 'a step.started whose index is a string',
    events: [{ type: 'step.started', payload: { index: '0', name: 'charge' } }],
    path: 'payload.index',
  },
  {
    what: 'an execution.failed whose error has no message',
    events: [{ type: 'execution.failed', payload: { error: { name: 'Error' } } }],
    path: 'payload.error',
  },
  {
    what: 'a timer.scheduled without its wake time',
    events: [{ type: 'timer.scheduled', payload: { index: 0, name: 'sleep' } }],
    path: 'payload.wakeAtMs',
  },
  {
    what: 'a child.completed with an unknown status',
    events: [
      { type: 'child.started', payload: { index: 0, name: 'child', childId: 'c' } },
      { type: 'child.completed', payload: { index: 0, childId: 'c', status: 'gone' } },
    ],
    path: 'payload.status',
  },
  {
    what: 'a payload that is an array',
    events: [{ type: 'execution.cancelled', payload: ['reason'] }],
    path: 'payload',
  },
];

/**
 * Folding a log checks what it reads, on every backend: an event written through the store whose
 * payload lacks the shape its type requires fails the load with `LOG_CORRUPT`, naming the
 * execution, the sequence and the field, instead of becoming a hole in the state.
 */
export function runtimeLogChecks(
  getHarness: () => RuntimeHarness,
  runtime: (options?: Partial<KernelRuntimeOptions>) => KernelRuntime,
  section: SectionDescribe<RuntimeSection>,
): void {
  section('folding checks what it reads', () => {
    const write = async (id: string, events: Malformed['events'], startedPayload = started) => {
      const envelopes: EventEnvelope[] = [
        { executionId: id, sequence: 0, type: 'execution.started', payload: startedPayload },
        ...events.map((event, index) => ({ executionId: id, sequence: index + 1, ...event })),
      ];
      await getHarness().store.append(envelopes);
      return envelopes.length - 1;
    };

    for (const { what, events, path } of malformed) {
      it(`${what} fails the load with LOG_CORRUPT naming execution, sequence and field`, async () => {
        const id = freshId('corrupt');
        const sequence = await write(id, events);
        const error = await loadState(getHarness().store, undefined, id).then(
          () => undefined,
          (caught: unknown) => caught,
        );
        expect(isLoomError(error, ErrorCode.LOG_CORRUPT)).toBe(true);
        expect(error).toMatchObject({ fields: { executionId: id, sequence, path } });
        expect((error as Error).message).toContain(`event ${sequence}`);
        expect((error as Error).message).toContain(id);
      });
    }

    it('an execution.started without its flow name fails at sequence 0', async () => {
      const id = freshId('corrupt-start');
      await write(id, [], { version: null, input: null } as never);
      await expect(loadState(getHarness().store, undefined, id)).rejects.toMatchObject({
        code: ErrorCode.LOG_CORRUPT,
        fields: { executionId: id, sequence: 0, path: 'payload.flow' },
      });
    });

    it('a settled snapshot without its terminal facts is LOG_CORRUPT, not an "unknown" error', async () => {
      const harness = getHarness();
      const id = freshId('corrupt-snapshot');
      await write(id, [
        { type: 'execution.failed', payload: { error: { name: 'E', message: 'm' } } },
      ]);
      await harness.snapshots.save({
        executionId: id,
        sequence: 1,
        at: harness.clock.now(),
        state: {
          executionId: id,
          flow: 'folded',
          version: null,
          input: null,
          status: 'failed',
          steps: [],
          consumedSignals: [],
          rootId: id,
          generation: 0,
          nextSequence: 2,
        },
      });
      await expect(
        runtime({ snapshots: harness.snapshots }).attach(id).result(),
      ).rejects.toMatchObject({
        code: ErrorCode.LOG_CORRUPT,
        fields: { executionId: id, sequence: 1, path: 'payload.error' },
      });
    });

    it('attach().result() of a corrupt execution rejects with LOG_CORRUPT, not a made-up outcome', async () => {
      const id = freshId('corrupt-attach');
      await write(id, [{ type: 'execution.completed', payload: {} }]);
      await expect(runtime().attach(id).result()).rejects.toMatchObject({
        code: ErrorCode.LOG_CORRUPT,
        fields: { executionId: id, sequence: 1, path: 'payload.output' },
      });
    });
  });
}
