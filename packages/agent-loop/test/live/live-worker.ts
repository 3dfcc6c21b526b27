// A worker of the live-text process test (ADR 0050). LIVE_ROLE=a starts LIVE_RUN_ID, which asks
// for an approval on its first turn; it prints `waiting <approval id>` and stays up until killed.
// LIVE_ROLE=b resumes the run once approved (its timer poll) and streams the answer: after each
// word but the last, its model waits for the file `<LIVE_DIR>/gate-<n>` (the test writes it once
// its follower has shown word n), so the text a follower sees cannot come from the recorded
// answer. It prints `result <json>`.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Backend } from '@loom/event-runtime';
import { type ModelProvider, StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { createAgentRuntime, defineAgent, defineTool } from '../../src/index.js';
import { liveAnswer } from './live-answer.js';

const env = process.env as Record<string, string | undefined>;
const runId = env.LIVE_RUN_ID as string;
const dir = env.LIVE_DIR as string;
const gateWaitMs = 30_000;

async function openBackend(): Promise<Backend> {
  if (env.LIVE_BACKEND === 'postgres') {
    const { openPostgres } = await import('@loom/event-runtime/postgres');
    return openPostgres({
      connectionString: env.LIVE_PG_URL as string,
      schema: env.LIVE_SCHEMA as string,
      migrate: true,
    });
  }
  const { openSqlite } = await import('@loom/event-runtime/sqlite');
  return openSqlite({ path: env.LIVE_DB as string, migrate: true });
}

async function gate(n: number): Promise<void> {
  const file = join(dir, `gate-${n}`);
  const deadline = Date.now() + gateWaitMs;
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`gate ${file} never opened`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const refund = defineTool({
  name: 'send_refund',
  description: 'Send a refund',
  input: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
  sideEffect: 'remote_mutation',
  run: async () => ({ sent: true }),
});
const stub = new StubModel({
  script: (request) =>
    request.messages.some((message) => message.role === 'tool')
      ? { text: liveAnswer }
      : { toolCalls: [{ tool: 'send_refund', input: { amount: 40 } }] },
});
const words = liveAnswer.split(' ').length;
const model: ModelProvider = {
  id: 'gated',
  generate: (request) => stub.generate(request),
  async *stream(request) {
    let n = 0;
    for await (const delta of stub.stream(request)) {
      yield delta;
      if (delta.type === 'text' && n < words - 1) await gate(n++);
    }
  },
};
const agent = defineAgent({ name: 'refunds', model, instructions: 'Refund.', tools: [refund] });

const backend = await openBackend();
const flows = createRuntime({ backend, timerPollMs: 50 });
const agents = createAgentRuntime({ flows, agents: [agent] });
if (env.LIVE_ROLE === 'a') {
  await agents.start(agent, 'Refund ticket 4521', { runId });
  const deadline = Date.now() + gateWaitMs;
  for (;;) {
    const pending = (await agents.approvals(runId)).find((a) => a.status === 'pending');
    if (pending !== undefined) {
      process.stdout.write(`waiting ${pending.id}\n`);
      break;
    }
    if (Date.now() > deadline) throw new Error('no approval was asked for');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // Up until killed (bounded: the harness kills a test process at its deadline).
  setInterval(() => undefined, 1_000);
} else {
  process.stdout.write('ready\n');
  const result = await agents.attach(runId).result();
  process.stdout.write(`result ${JSON.stringify(result)}\n`);
  await flows.shutdown();
  process.exit(0);
}
