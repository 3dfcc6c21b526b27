import { bench, describe } from 'vitest';
import { InMemoryEventStore } from '../store/memory/in-memory-event-store.js';
import type { Flow } from './flow.js';
import { createKernelRuntime } from './runtime.js';

/** Warm the JIT before measuring, and measure long enough that GC pauses average out. */
const options = { warmupTime: 500, time: 2_000 };
const input = { data: 'x'.repeat(256 - JSON.stringify({ data: '' }).length) };

function noopFlow(steps: number): Flow<typeof input, null> {
  const names = Array.from({ length: steps }, (_, index) => `step-${index}`);
  return {
    name: `bench-${steps}-step`,
    async run(ctx) {
      for (const name of names) await ctx.step(name, () => null);
      return null;
    },
  };
}

// One execution per iteration, start to result, one at a time: the mean is the kernel's
// per-execution cost in the in-memory store (2n + 2 events in n + 1 appends).
describe('one execution on the in-memory store', () => {
  const runtime = createKernelRuntime({ store: new InMemoryEventStore() });
  const oneStep = noopFlow(1);
  const threeSteps = noopFlow(3);
  let next = 0;

  bench(
    '1-step no-op flow',
    async () => {
      const handle = await runtime.start(oneStep, input, { executionId: `one-${next++}` });
      await handle.result();
    },
    options,
  );

  bench(
    '3-step no-op flow',
    async () => {
      const handle = await runtime.start(threeSteps, input, { executionId: `three-${next++}` });
      await handle.result();
    },
    options,
  );
});
