import type { LoomError } from '@loom/event-runtime';
import { kernelRuntimeSlot } from '@loom/event-runtime/kernel';
import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { cleanupsAfterEach, codeOf, testBackends } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { defineSignal } from './define-signal.js';
import { createRuntime, type Runtime } from './flow-runtime.js';
import type { StandardSchemaV1 } from './standard-schema.js';

/** A schema whose input type is `T` (as zod's would be), checking with `check` at run time. */
function schemaOf<T>(check: (value: unknown) => string | undefined): StandardSchemaV1<T, T> {
  return {
    '~standard': {
      version: 1,
      vendor: 'loom-test',
      validate: (value) => {
        const problem = check(value);
        return problem === undefined
          ? { value: value as T }
          : { issues: [{ message: problem, path: ['by'] }] };
      },
    },
  };
}

const approval = schemaOf<{ by: string }>((value) =>
  typeof (value as { by?: unknown })?.by === 'string' ? undefined : 'must be a string',
);
const reason = schemaOf<string>((value) => (typeof value === 'string' ? undefined : 'a string'));

const order = defineFlow(
  { name: 'order', signals: { approve: approval, reject: reason } },
  async (ctx) => {
    const decision = await ctx.waitForSignal<{ by: string }>('approve');
    return decision.received ? `approved by ${decision.payload.by}` : 'no decision';
  },
);
const payment = defineFlow({ name: 'payment' }, async (ctx) => {
  await ctx.waitForSignal('approve');
  return 'paid';
});
const approveSignal = defineSignal('approve', approval);
/** Waits for the defined signal itself: the payload is the schema's output, checked on receipt. */
const approvalByDefinition = defineFlow({ name: 'approval-by-definition' }, async (ctx) => {
  const decision = await ctx.waitForSignal(approveSignal, { timeout: '1h' });
  return decision.received ? `approved by ${decision.payload.by.toUpperCase()}` : 'timed out';
});
/** Labels its waits for operators: an approval (with an expiry) and a question. */
const labelled = defineFlow({ name: 'labelled' }, async (ctx) => {
  const decision = await ctx.waitForSignal(approveSignal, { timeout: '1h', kind: 'approval' });
  const answer = await ctx.waitForSignal('answer', { kind: 'question' });
  return [decision.received, answer.received];
});
const shipment = defineFlow(
  { name: 'shipment', version: '3', signals: { delivered: reason } },
  async (ctx, input: { sku: string }) => {
    await ctx.waitForSignal('delivered');
    return input.sku.length;
  },
);

/**
 * Compile-time checks, never run: `pnpm lint` type-checks this file, and each
 * `@ts-expect-error` fails the build if the line below it compiles.
 */
export function senderTypes(runtime: Runtime): void {
  void runtime.signal(order, 'order-1', 'approve', { by: 'ada' });
  void runtime.signal(order, 'order-1', 'reject', 'too expensive');
  // @ts-expect-error a misspelt signal name is a compile error
  void runtime.signal(order, 'order-1', 'aprove', { by: 'ada' });
  // @ts-expect-error the payload must be the schema's input type
  void runtime.signal(order, 'order-1', 'approve', { by: 42 });
  // @ts-expect-error the payload is not optional
  void runtime.signal(order, 'order-1', 'approve');
  // @ts-expect-error each name has its own payload type
  void runtime.signal(order, 'order-1', 'reject', { by: 'ada' });
  void runtime.signal(approveSignal, 'order-1', { by: 'ada' });
  // @ts-expect-error a defined signal's payload is checked too
  void runtime.signal(approveSignal, 'order-1', { by: true });
  // A flow with a typed input and output is typed the same way.
  void runtime.signal(shipment, 'shipment-1', 'delivered', 'at the door');
  // @ts-expect-error the input type plays no part in the payload's
  void runtime.signal(shipment, 'shipment-1', 'delivered', { sku: 'x' });
  // A flow that declares no signals accepts any name and payload, as at run time.
  void runtime.signal(payment, 'payment-1', 'anything', { at: 1 });
  // The untyped form stays for advanced use.
  void runtime.signal('order-1', 'aprove', 42);
}

/** Compile-time checks of the receiving side, never run. */
export function receiverTypes(ctx: Parameters<Parameters<typeof defineFlow>[1]>[0]): void {
  void ctx.waitForSignal(approveSignal).then((decision) => {
    if (decision.received) {
      const by: string = decision.payload.by;
      void by;
      // @ts-expect-error the payload is the schema's output type: it has no 'amount'
      void decision.payload.amount;
    }
  });
  // @ts-expect-error a defined signal brings its own schema
  void ctx.waitForSignal(approveSignal, { schema: approval });
}

for (const [backend, open] of testBackends('signals')) {
  describe(`typed signals on ${backend}`, () => {
    const cleanups = cleanupsAfterEach();
    const make = async () => {
      const clock = new ManualClock();
      const made = await open(clock);
      const store = made.store;
      const runtime = createRuntime({
        store,
        clock,
        flows: [order, payment, approvalByDefinition, labelled],
        timerPollMs: 0,
        inlineWaitMs: 0,
      });
      cleanups.push(async () => {
        await runtime.shutdown();
        await made.drop();
        await store.close();
      });
      return { runtime, store, clock };
    };

    it("a wait's kind is what the execution index says it waits for while it blocks", async () => {
      const { runtime, store } = await make();
      const waitingFor = async () => {
        for (let poll = 0; poll < 400; poll++) {
          const row = (await store.findExecutions({ status: 'suspended' })).find(
            (found) => found.executionId === 'l-1',
          );
          if (row !== undefined && !runtime.activeExecutions.includes('l-1')) return row.waitingFor;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        throw new Error('l-1 did not suspend within 2 s');
      };
      const handle = await runtime.start(labelled, undefined as never, { executionId: 'l-1' });
      expect(await waitingFor()).toEqual(['timer', 'approval']);
      await runtime.signal(approveSignal, 'l-1', { by: 'ada' });
      expect(await runtime.wakeDue(10)).toEqual(['l-1']);
      expect(await waitingFor()).toEqual(['question']);
      await runtime.signal('l-1', 'answer', 'blue');
      expect(await runtime.wakeDue(10)).toEqual(['l-1']);
      expect(await handle.result()).toEqual([true, true]);
      const wrong = defineFlow({ name: 'wrong-kind' }, async (ctx) => {
        const kind = 'child' as 'signal';
        const wait = await ctx.waitForSignal('x', { kind });
        return wait.received;
      });
      const failed = await runtime.start(wrong, undefined as never, { executionId: 'w-1' });
      await expect(failed.result()).rejects.toMatchObject({ code: 'EXECUTION_FAILED' });
      await expect(failed.result()).rejects.toThrow(/got kind "child": a signal wait's kind is/);
    });

    it('a typed signal reaches the flow', async () => {
      const { runtime } = await make();
      const handle = await runtime.start(order, undefined as never, { executionId: 'o-1' });
      expect(await runtime.signal(order, 'o-1', 'approve', { by: 'ada' })).toEqual({
        signalId: 1,
        duplicate: false,
      });
      await runtime.wakeDue(10);
      expect(await handle.result()).toBe('approved by ada');
    });

    it('a payload the schema refuses is INVALID_SIGNAL and nothing is written', async () => {
      const { runtime, store } = await make();
      await runtime.start(order, undefined as never, { executionId: 'o-2' });
      const refused = runtime.signal(order, 'o-2', 'approve', { by: 42 } as never);
      await expect(refused).rejects.toMatchObject({
        code: WorkflowErrorCode.INVALID_SIGNAL,
        fields: { signal: 'approve', executionId: 'o-2', issues: ['by: must be a string'] },
      });
      expect(await codeOf(runtime.signal(approveSignal, 'o-2', { by: 7 } as never))).toBe(
        WorkflowErrorCode.INVALID_SIGNAL,
      );
      expect(
        await codeOf(runtime.signal(order, 'o-2', 'aprove' as string as 'approve', { by: 'ada' })),
      ).toBe(WorkflowErrorCode.INVALID_SIGNAL);
      expect(await store.readSignals('o-2')).toEqual([]);
    });

    it('a flow definition that is not the execution’s flow is INVALID_SIGNAL', async () => {
      const { runtime, store } = await make();
      await runtime.start(payment, undefined as never, { executionId: 'p-1' });
      const wrong = runtime.signal(order, 'p-1', 'approve', { by: 'ada' });
      await expect(wrong).rejects.toMatchObject({ code: WorkflowErrorCode.INVALID_SIGNAL });
      await expect(wrong).rejects.toThrow(/runs flow 'payment', not 'order'/);
      expect(await store.readSignals('p-1')).toEqual([]);
    });

    it('ctx.waitForSignal(definition) receives under its name, typed and checked by its schema', async () => {
      const { runtime, store, clock } = await make();
      /** Resolves once this node stopped driving `id` (it suspended); fails after 2 s. */
      const suspended = async (id: string) => {
        for (let poll = 0; poll < 400 && runtime.activeExecutions.includes(id); poll++)
          await new Promise((resolve) => setTimeout(resolve, 5));
        expect(runtime.activeExecutions).not.toContain(id);
      };
      const handle = await runtime.start(approvalByDefinition, undefined as never, {
        executionId: 'd-1',
      });
      await suspended('d-1');
      await runtime.signal(approveSignal, 'd-1', { by: 'ada' });
      expect(await runtime.wakeDue(10)).toEqual(['d-1']);
      expect(await handle.result()).toBe('approved by ADA');
      // A payload sent untyped past the sender's checks is refused on receipt by the schema.
      const refused = await runtime.start(approvalByDefinition, undefined as never, {
        executionId: 'd-2',
      });
      await suspended('d-2');
      await runtime[kernelRuntimeSlot].signal('d-2', 'approve', { by: 7 });
      expect(await runtime.wakeDue(10)).toEqual(['d-2']);
      const error = (await refused.result().catch((caught) => caught)) as LoomError;
      expect(error.code).toBe('EXECUTION_FAILED');
      expect((error.fields.error as { code: string }).code).toBe(WorkflowErrorCode.INVALID_SIGNAL);
      // The definition's timeout works as the name form's does.
      const waiting = await runtime.start(approvalByDefinition, undefined as never, {
        executionId: 'd-3',
      });
      await suspended('d-3');
      await clock.advance(3_600_000);
      expect(await runtime.wakeDue(10)).toEqual(['d-3']);
      expect(await waiting.result()).toBe('timed out');
      expect((await store.readSignals('d-1')).map((signal) => signal.name)).toEqual(['approve']);
    });

    it('a defined signal is validated by its schema and delivered under its name', async () => {
      const { runtime, store } = await make();
      await runtime.start(payment, undefined as never, { executionId: 'p-2' });
      await runtime.signal(approveSignal, 'p-2', { by: 'grace' }, { idempotencyKey: 'k' });
      const [sent] = await store.readSignals('p-2');
      expect(sent).toMatchObject({
        name: 'approve',
        payload: { by: 'grace' },
        idempotencyKey: 'k',
      });
    });
  });
}

describe('defineSignal', () => {
  it('refuses an empty name or a value that is not a schema', () => {
    expect(() => defineSignal('', approval)).toThrow(/signal name/);
    expect(() => defineSignal('approve', {} as never)).toThrow(/Standard Schema/);
  });
});
