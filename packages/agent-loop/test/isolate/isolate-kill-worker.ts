// One life of an agent process whose one tool, `act`, is isolated (act-module.ts, in a child
// process), on the SQLite file KILL_DB. With KILL_AT=mid_tool the child SIGKILLs this process
// after its side effect. With KILL_RESOLVE it first decides the pending interrupted_side_effect
// approval. Prints `result <json>` or `approval <json>` (test/kill/worker-life.ts).
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { createAgentRuntime, defineAgent, defineTool, type SideEffect } from '../../src/index.js';
import { decidePending, liveOneLife } from '../kill/worker-life.js';

const env = process.env as Record<string, string | undefined>;
const runId = env.KILL_RUN_ID as string;

const act = defineTool({
  name: 'act',
  description: 'Do the thing once',
  input: { type: 'object' },
  sideEffect: env.KILL_SIDE_EFFECT as SideEffect,
  isolate: { module: new URL('./act-module.ts', import.meta.url), execArgv: ['--import', 'tsx'] },
});
const agent = defineAgent({
  name: 'isolated-killable',
  // The answer depends on the prompt, not on a call count: a restarted process has a fresh stub.
  model: new StubModel({
    script: (request) =>
      request.messages.some((message) => message.role === 'tool')
        ? { text: 'finished' }
        : { toolCalls: [{ tool: 'act', input: {} }] },
  }),
  instructions: 'Call act once, then say finished.',
  tools: [act],
  policy: () => ({ kind: 'allow' }),
});

const store = SqliteEventStore.open({ path: env.KILL_DB as string, migrate: true });
const flows = createRuntime({ store, recoverQuietMs: 0, timerPollMs: 20 });
const agents = createAgentRuntime({ flows, agents: [agent] });
if (env.KILL_RESOLVE !== undefined) await decidePending(agents, runId, env.KILL_RESOLVE);
const outcome = await liveOneLife(flows, agents, agent, runId);
process.stdout.write(`${outcome}\n`);
await flows.shutdown();
await agents.close();
await store.close();
// A run left waiting keeps its result() promise, which keeps a process alive: this life is over.
process.exit(0);
