// Type-level tests: `pnpm lint` compiles this file (tsc -p tsconfig.check.json), so each
// `@ts-expect-error` below fails the build if the line it marks compiles. The vitest part only
// checks that the accepted shapes also run.
import { InMemoryEventStore } from '@loom/event-runtime';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { defineFlow } from './define-flow.js';
import { createRuntime } from './flow-runtime.js';
import type { Json, NotJson } from './json.js';

interface Order {
  id: string;
  qty: number;
  note?: string;
  lines: ReadonlyArray<{ sku: string; price: number }>;
}
type Status = 'open' | 'paid';
class Money {
  constructor(readonly cents: number) {}
  plus(other: Money): Money {
    return new Money(this.cents + other.cents);
  }
}

const order: Order = { id: 'o-1', qty: 2, lines: [{ sku: 'loom-1', price: 5 }] };

// Flows whose types JSON holds: interfaces without index signatures, unions, arrays, nothing.
const accepted = defineFlow({ name: 'json-accepted' }, async (ctx, input: Order) => {
  const copy: Order = await ctx.step('copy', () => ({ ...input }));
  const viaPromise: Order = await ctx.step('annotated', async (): Promise<Order> => copy);
  const status: Status = await ctx.step('status', (): Status => 'paid');
  const count: number = await ctx.step('count', async () => input.lines.length);
  await ctx.step('nothing', () => undefined);
  await ctx.step('void', async () => {});
  const tuple = await ctx.step('tuple', () => [1, 'a', { ok: true }, null] as const);
  const explicit: string = await ctx.step<string>('explicit', async () => input.id);
  return { order: viaPromise, status, count, first: tuple[0], explicit };
});

// What the log cannot hold is refused at compile time.
defineFlow({ name: 'json-refused' }, async (ctx) => {
  // @ts-expect-error a Date is not JSON
  await ctx.step('date', () => new Date());
  // @ts-expect-error a Map is not JSON
  await ctx.step('map', async () => new Map<string, number>());
  // @ts-expect-error a Set is not JSON
  await ctx.step('set', () => new Set(['a']));
  // @ts-expect-error a bigint is not JSON
  await ctx.step('bigint', () => 10n);
  // @ts-expect-error an instance of a class with methods is not a plain object
  await ctx.step('class', () => new Money(100));
  // @ts-expect-error nested inside a plain object too
  await ctx.step('nested', async (): Promise<{ at: Date }> => ({ at: new Date() }));
  // @ts-expect-error an explicit type argument is checked too
  await ctx.step<Date>('explicit-date', async () => new Date());
  // @ts-expect-error a function is not JSON
  await ctx.step('function', () => Math.max);
  return null;
});

// @ts-expect-error a flow output holding a Date
defineFlow({ name: 'json-output' }, async () => ({ at: new Date() }));

// @ts-expect-error a flow input holding a bigint
defineFlow({ name: 'json-input' }, async (_ctx, input: { amount: bigint }) => String(input.amount));

describe('Json', () => {
  it('is the type itself for JSON shapes, and names what it refuses', () => {
    expectTypeOf<Json<Order>>().toEqualTypeOf<Order>();
    expectTypeOf<Json<Status[]>>().toEqualTypeOf<Status[]>();
    expectTypeOf<Json<unknown>>().toEqualTypeOf<unknown>();
    expectTypeOf<Json<{ at: Date }>>().toEqualTypeOf<{
      at: NotJson<'a Date: store date.toISOString() or date.getTime()'>;
    }>();
    expectTypeOf<Json<bigint>>().toEqualTypeOf<NotJson<'a bigint: store it as a string'>>();
  });

  it('accepted flows run and their values round-trip through the log', async () => {
    const runtime = createRuntime({ store: new InMemoryEventStore() });
    const handle = await runtime.start(accepted, order);
    expect(await handle.result()).toEqual({
      order,
      status: 'paid',
      count: 1,
      first: 1,
      explicit: 'o-1',
    });
    await runtime.shutdown();
  });
});
