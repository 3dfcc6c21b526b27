// Signals: typed for the sender, validated before they are written, kept in order, delivered
// once per idempotency key.
import {
  createRuntime,
  defineFlow,
  openMemory,
  type StandardSchemaV1,
} from '@loom/workflow-runtime';

// Any Standard Schema works (zod, valibot, …); a hand-written one keeps the example dependency-free.
// Its input type is what `runtime.signal(expense, id, 'approve', payload)` accepts at compile time.
const approval: StandardSchemaV1<{ by: string }, { by: string }> = {
  '~standard': {
    version: 1,
    vendor: 'example',
    validate: (value) =>
      typeof (value as { by?: unknown })?.by === 'string'
        ? { value: value as { by: string } }
        : { issues: [{ message: 'by must be a string', path: ['by'] }] },
  },
};

const expense = defineFlow(
  { name: 'expense', signals: { approve: approval } },
  async (ctx, amount: number) => {
    const decision = await ctx.waitForSignal('approve', { timeout: '7d', schema: approval });
    return decision.received ? `${amount} approved by ${decision.payload.by}` : `${amount} expired`;
  },
);

const runtime = createRuntime({
  backend: openMemory(),
  flows: [expense],
  timerPollMs: 50,
});
const handle = await runtime.start(expense, 120, { executionId: 'expense-1' });
// A payload off the wire is untyped: the untyped form still validates it against the schema.
await runtime
  .signal('expense-1', 'approve', { by: 42 })
  .catch((error) => console.log('refused:', error.code));
// Typed by the flow: 'aprove' or { by: 42 } here would not compile.
await runtime.signal(
  expense,
  'expense-1',
  'approve',
  { by: 'grace' },
  { idempotencyKey: 'click-1' },
);
await runtime.signal(
  expense,
  'expense-1',
  'approve',
  { by: 'grace' },
  { idempotencyKey: 'click-1' },
); // a no-op
console.log(await handle.result());
await runtime.shutdown();
