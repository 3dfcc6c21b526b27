// A worker as a new user writes it (createRuntime with the default settings, no nodeId), for the
// restart-with-a-dashboard-open test. It drives run RUN_ID of agent `refunds`, whose
// remote_mutation tool `refund` needs approval (the default policy). The tool appends a line to
// SIDE_CHANNEL, then takes TOOL_MS: the test SIGKILLs the process in there. LIFE=boot is the
// restart: it prints `boot <json>` with the ids its boot recovery round resumed and the run's
// pending approval once the run waits on one (null if none came within 20 s).
import { appendFileSync } from 'node:fs';
import { type Approval, createAgentRuntime, defineAgent, defineTool } from '@loom/agent-loop';
import type { Backend } from '@loom/event-runtime';
import { StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';

const env = process.env as Record<string, string | undefined>;
const runId = env.RUN_ID as string;

async function open(): Promise<Backend> {
  if (env.PG_SCHEMA !== undefined) {
    const { openPostgres } = await import('@loom/event-runtime/postgres');
    return openPostgres({ connectionString: env.PG_URL as string, schema: env.PG_SCHEMA });
  }
  const { openSqlite } = await import('@loom/event-runtime/sqlite');
  return openSqlite({ path: env.SQLITE_PATH as string });
}

const refund = defineTool({
  name: 'refund',
  description: 'Refund an order',
  input: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
  sideEffect: 'remote_mutation',
  run: async (_input, context) => {
    appendFileSync(env.SIDE_CHANNEL as string, `${context.idempotencyKey}\n`);
    await new Promise((resolve) => setTimeout(resolve, Number(env.TOOL_MS ?? '8000')));
    return { refunded: true };
  },
});

// Answers by what the model was shown, not by call count: a restarted process asks afresh.
const model = new StubModel({
  script: (request) =>
    request.messages.some((message) => message.role === 'tool')
      ? { text: 'refunded' }
      : { toolCalls: [{ tool: 'refund', input: { order: 'A-1' } }] },
});
const agent = defineAgent({ name: 'refunds', model, instructions: 'Refund A-1.', tools: [refund] });

const backend = await open();
const flows = createRuntime({ backend });
const agents = createAgentRuntime({ flows, agents: [agent] });

async function pending(): Promise<Approval | undefined> {
  return (await agents.approvals(runId)).find((approval) => approval.status === 'pending');
}

if (env.LIFE === 'boot') {
  const resumed = await flows.recover();
  let approval: Approval | undefined;
  const deadline = Date.now() + 20_000;
  while (approval?.kind !== 'interrupted_side_effect' && Date.now() < deadline) {
    approval = await pending();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  console.log(`boot ${JSON.stringify({ resumed, approval: approval ?? null })}`);
  await flows.shutdown();
  process.exit(0);
}

// The first life: start the run; the test approves it and kills this process inside the tool.
await agents.start(agent, 'refund A-1', { runId });
console.log('started');
await new Promise((resolve) => setTimeout(resolve, 60_000));
process.exit(3);
