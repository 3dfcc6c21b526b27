// The process that drives a run for the follow-by-id tests. It runs FOLLOW_RUN_ID of an agent
// that looks an order up (turn 1), then calls `wait_gate` (turn 2), a tool that returns once the
// file FOLLOW_GATE exists, and then answers with text (turn 3). It prints `result <json>`.
import { existsSync } from 'node:fs';
import { StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { createAgentRuntime, defineAgent, defineTool } from '../../src/index.js';
import { openWorkerStore } from '../kill/worker-store.js';

const env = process.env as Record<string, string | undefined>;
const runId = env.FOLLOW_RUN_ID as string;
const gate = env.FOLLOW_GATE as string;
const gateWaitMs = 60_000;

const lookup = defineTool({
  name: 'lookup',
  description: 'Look an order up',
  input: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  sideEffect: 'read_only',
  run: async (input) => ({ id: (input as { id: string }).id, delivered: false }),
});
const waitGate = defineTool({
  name: 'wait_gate',
  description: 'Wait until the gate opens',
  input: { type: 'object', properties: {} },
  sideEffect: 'read_only',
  timeoutMs: gateWaitMs,
  run: async () => {
    const deadline = Date.now() + gateWaitMs;
    while (!existsSync(gate)) {
      if (Date.now() > deadline) throw new Error(`the gate ${gate} never opened`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return { opened: true };
  },
});
const model = new StubModel({
  script: [
    { toolCalls: [{ tool: 'lookup', input: { id: 'A-17' } }] },
    { toolCalls: [{ tool: 'wait_gate', input: {} }] },
    { text: 'Order A-17 was never delivered; the gate is open.' },
  ],
});
const agent = defineAgent({
  name: 'followed',
  model,
  instructions: 'Help.',
  tools: [lookup, waitGate],
});

const store = await openWorkerStore('FOLLOW');
const close = () => store.close();
const flows = createRuntime({ store });
const agents = createAgentRuntime({ flows, agents: [agent] });
const result = await agents.run(agent, 'Order A-17 never arrived.', { runId });
process.stdout.write(`result ${JSON.stringify(result)}\n`);
await flows.shutdown();
await close();
process.exit(0);
