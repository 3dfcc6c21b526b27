// A flow author's test: run your own flows under deterministic simulation. Every seed runs them
// on three simulated nodes with store latency, transient errors, lost acknowledgements, pauses
// past the lease and restarts, then checks the invariants (nothing acknowledged lost, every
// execution ended once, fences held, timers not early, signals once, replay agrees).
import { simulate } from '@loom/dst';
import { defineFlow } from '@loom/workflow-runtime';
import { expect, it } from 'vitest';

const order = defineFlow({ name: 'order' }, async (ctx, input: { sku: string }) => {
  const reserved = await ctx.step('reserve', () => `reserved ${input.sku}`);
  await ctx.sleep('2s');
  const approval = await ctx.waitForSignal<{ by: string }>('approve');
  const by = approval.received ? approval.payload.by : 'nobody';
  return ctx.step('ship', () => `${reserved}, approved by ${by}, shipped`);
});

it('the order flow keeps every invariant under 20 seeds of faults', async () => {
  const summary = await simulate([order], {
    seeds: 20,
    input: (_flow, index) => ({ sku: `sku-${index}` }),
    signals: () => [{ name: 'approve', payload: { by: 'ada' }, idempotencyKey: 'approve-1' }],
  });
  expect(summary.failures.map((failure) => failure.repro)).toEqual([]);
  expect(summary.seedsRun).toBe(20);
  expect(summary.faultsInjected).toBeGreaterThan(0);
});
