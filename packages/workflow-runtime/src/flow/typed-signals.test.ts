import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EventStore, InMemoryEventStore } from '@loom/event-runtime';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../errors.js';
import { codeOf } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { defineSignal } from './define-signal.js';
import { createRuntime, type Runtime } from './flow-runtime.js';
import type { StandardSchemaV1 } from './standard-schema.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-typed-signals-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
let fileCounter = 0;

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

const backends: Array<[string, () => EventStore]> = [
  ['memory', () => new InMemoryEventStore()],
  [
    'sqlite',
    () =>
      SqliteEventStore.open({
        path: join(directory, `signals-${++fileCounter}.db`),
        migrate: true,
      }),
  ],
];

for (const [backend, open] of backends) {
  describe(`typed signals on ${backend}`, () => {
    const cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0)) await cleanup();
    });
    const make = () => {
      const store = open();
      const runtime = createRuntime({
        store,
        flows: [order, payment],
        timerPollMs: 0,
        inlineWaitMs: 0,
      });
      cleanups.push(async () => {
        await runtime.shutdown();
        await store.close();
      });
      return { runtime, store };
    };

    it('a typed signal reaches the flow', async () => {
      const { runtime } = make();
      const handle = await runtime.start(order, undefined as never, { executionId: 'o-1' });
      expect(await runtime.signal(order, 'o-1', 'approve', { by: 'ada' })).toEqual({
        signalId: 1,
        duplicate: false,
      });
      await runtime.wakeDue(10);
      expect(await handle.result()).toBe('approved by ada');
    });

    it('a payload the schema refuses is INVALID_SIGNAL and nothing is written', async () => {
      const { runtime, store } = make();
      await runtime.start(order, undefined as never, { executionId: 'o-2' });
      const refused = runtime.signal(order, 'o-2', 'approve', { by: 42 } as never);
      await expect(refused).rejects.toMatchObject({
        code: ErrorCode.INVALID_SIGNAL,
        fields: { signal: 'approve', executionId: 'o-2', issues: ['by: must be a string'] },
      });
      expect(await codeOf(runtime.signal(approveSignal, 'o-2', { by: 7 } as never))).toBe(
        ErrorCode.INVALID_SIGNAL,
      );
      expect(
        await codeOf(runtime.signal(order, 'o-2', 'aprove' as string as 'approve', { by: 'ada' })),
      ).toBe(ErrorCode.INVALID_SIGNAL);
      expect(await store.readSignals('o-2')).toEqual([]);
    });

    it('a flow definition that is not the execution’s flow is INVALID_SIGNAL', async () => {
      const { runtime, store } = make();
      await runtime.start(payment, undefined as never, { executionId: 'p-1' });
      const wrong = runtime.signal(order, 'p-1', 'approve', { by: 'ada' });
      await expect(wrong).rejects.toMatchObject({ code: ErrorCode.INVALID_SIGNAL });
      await expect(wrong).rejects.toThrow(/runs flow 'payment', not 'order'/);
      expect(await store.readSignals('p-1')).toEqual([]);
    });

    it('a defined signal is validated by its schema and delivered under its name', async () => {
      const { runtime, store } = make();
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
