// One life of an agent process for the approve-resolution test. It drives run RUN_ID of agent
// `wirer`, whose `remote_mutation` tool appends a line to SIDE_CHANNEL each time it is really
// called. With DIE=1 it SIGKILLs itself inside the tool, after the side effect: the log then has
// `tool_started` and no result. It prints `result <json>` when the run ends, or `waiting` when
// the run is suspended on an approval.
import { appendFileSync } from 'node:fs';
import { createAgentRuntime, defineAgent, defineTool } from '@loom/agent-loop';
import type { Backend } from '@loom/event-runtime';
import { StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';

const env = process.env as Record<string, string | undefined>;
const runId = env.RUN_ID as string;

async function open(): Promise<Backend> {
  if (env.PG_SCHEMA !== undefined) {
    const { openPostgres } = await import('@loom/event-runtime/postgres');
    return openPostgres({
      connectionString: env.PG_URL as string,
      schema: env.PG_SCHEMA,
      migrate: true,
    });
  }
  const { openSqlite } = await import('@loom/event-runtime/sqlite');
  return openSqlite({ path: env.SQLITE_PATH as string, migrate: true });
}

const wire = defineTool({
  name: 'wire_money',
  description: 'Wire money to an account',
  input: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
  sideEffect: 'remote_mutation',
  run: async (input, context) => {
    appendFileSync(env.SIDE_CHANNEL as string, `${context.idempotencyKey}\n`);
    if (env.DIE === '1') process.kill(process.pid, 'SIGKILL');
    return { wired: (input as { to: string }).to };
  },
});

// Answers by what the model was shown, not by call count: a restarted process asks afresh.
const model = new StubModel({
  script: (request) =>
    request.messages.some((message) => message.role === 'tool')
      ? { text: 'wired' }
      : { toolCalls: [{ tool: 'wire_money', input: { to: 'ana' } }] },
});
const agent = defineAgent({
  name: 'wirer',
  model,
  instructions: 'Wire money to ana once.',
  tools: [wire],
  // Runs without asking: the approval this test decides is the one a crash leaves behind.
  policy: () => ({ kind: 'allow' }),
});

const backend = await open();
const flows = createRuntime({ backend, recoverQuietMs: 0, timerPollMs: 20 });
const agents = createAgentRuntime({ flows, agents: [agent] });
await flows.recover();
await flows.wakeDue();
const known = await flows.status(runId).then(
  () => true,
  () => false,
);
const run = known ? agents.attach(runId) : await agents.start(agent, 'wire ana', { runId });
let line: string | undefined;
void run.result().then(
  (result) => {
    line ??= `result ${JSON.stringify(result)}`;
  },
  (error: unknown) => {
    // A run left waiting is still followed when this life shuts its store below: that wait then
    // ends with STORE_CLOSED, which is this life ending, not a failure. Before, it is one.
    if (line === undefined) throw error;
  },
);
const deadline = Date.now() + 30_000;
while (line === undefined) {
  if (Date.now() > deadline) throw new Error(`run ${runId} neither ended nor waited within 30 s`);
  const pending = (await agents.approvals(runId)).some((a) => a.status === 'pending');
  if (pending && line === undefined) line = 'waiting';
  await new Promise((resolve) => setTimeout(resolve, 20));
}
console.log(line);
await flows.shutdown();
// A run left waiting keeps its result() promise, which holds the process open: this life is over.
process.exit(0);
