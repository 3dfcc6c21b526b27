// Children (awaited durably; a parent's cancel reaches them) and continue-as-new (a fresh log).
import { createRuntime, defineFlow, openMemory } from '@loom/workflow-runtime';

const square = defineFlow({ name: 'square' }, async (ctx, n: number) =>
  ctx.step('multiply', () => n * n),
);
const sumOfSquares = defineFlow(
  { name: 'sum-of-squares' },
  async (ctx, input: { from: number; to: number; total: number }) => {
    const total = input.total + (await ctx.child(square, input.from));
    if (input.from === input.to) return total;
    return ctx.continueAsNew({ from: input.from + 1, to: input.to, total }); // one log per number
  },
);

const runtime = createRuntime({
  backend: openMemory(),
  flows: [square, sumOfSquares],
  timerPollMs: 20,
});
const handle = await runtime.start(
  sumOfSquares,
  { from: 1, to: 4, total: 0 },
  { executionId: 'sum' },
);
console.log('1² + 2² + 3² + 4² =', await handle.result()); // follows sum → sum#1 → sum#2 → sum#3
await runtime.shutdown();
