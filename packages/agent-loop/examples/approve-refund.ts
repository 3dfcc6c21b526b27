// A support agent on a SQLite file with the stub model: it looks an order up (read_only, runs at
// once), asks to refund it (remote_mutation: the default policy wants a person's approval), and
// finishes once a person approves. Run: pnpm --filter @loom/agent-loop exec tsx examples/approve-refund.ts
import { createAgentRuntime, defineAgent, defineTool } from '@loom/agent-loop';
import { StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import { z } from 'zod';

const refunds: string[] = [];
const lookup = defineTool({
  name: 'lookup_order',
  description: 'Look an order up by id',
  input: z.object({ id: z.string() }),
  sideEffect: 'read_only',
  run: async (input) => ({ id: input.id, paidCents: 4_200, delivered: false }),
});
const refund = defineTool({
  name: 'refund',
  description: 'Refund an order in full',
  input: z.object({ id: z.string() }),
  sideEffect: 'remote_mutation',
  run: async (input, context) => {
    refunds.push(`${input.id} (key ${context.idempotencyKey})`);
    return 'refunded';
  },
});

// A scripted model standing in for a real one: it answers from what the prompt holds.
const model = new StubModel({
  script: (request) => {
    const said = JSON.stringify(request.messages);
    if (!said.includes('paidCents'))
      return { toolCalls: [{ tool: 'lookup_order', input: { id: 'A-17' } }] };
    if (!said.includes('refunded'))
      return { toolCalls: [{ tool: 'refund', input: { id: 'A-17' } }] };
    return { text: 'Order A-17 was never delivered; I refunded it.' };
  },
});
const support = defineAgent({
  name: 'support',
  model,
  instructions: 'You resolve order complaints. Refund undelivered orders.',
  tools: [lookup, refund],
});

const flows = createRuntime({
  backend: openSqlite({ path: ':memory:', migrate: true }),
  timerPollMs: 50,
});
const agents = createAgentRuntime({ flows, agents: [support] });

const run = await agents.start(support, 'Order A-17 never arrived.', { runId: 'ticket-981' });

// The run now waits, holding no lease. Any process on the same store can list and decide.
let pending = (await agents.approvals(run.runId)).filter((a) => a.status === 'pending');
for (let polls = 0; pending.length === 0 && polls < 200; polls++) {
  await new Promise((resolve) => setTimeout(resolve, 10));
  pending = (await agents.approvals(run.runId)).filter((a) => a.status === 'pending');
}
const [approval] = pending;
if (approval === undefined) throw new Error('the run never asked for approval');
console.log('approval asked:', approval.kind, approval.request.tool, approval.request.input);

await agents.approve(approval.id, {
  by: 'ana@example.com',
  note: 'customer verified',
  requestHash: approval.requestHash,
});
const result = await run.result();
console.log('result:', result.reason, '-', result.output, `(${result.turns} turns)`);
console.log('refunds made:', refunds);
console.log('decided by:', (await agents.approvals(run.runId))[0]?.decision?.by);
await flows.shutdown(); // closes the backend it was given
