// One life of an agent process for the kill matrix. It drives run KILL_RUN_ID of an agent with
// one tool of side-effect class KILL_SIDE_EFFECT that appends a line to KILL_INVOCATIONS each
// time it is called (the side channel the test counts). With KILL_AT set it SIGKILLs itself at
// that transition (or inside the tool, after the side effect, for `mid_tool`). With
// KILL_RESOLVE set it first decides the run's pending interrupted_side_effect approval
// (`{ kind: 'rerun' }`, `{ kind: 'record', output }`, `{ kind: 'reject' }`, or `{ kind: 'plain' }`:
// an approve without a resolution, which must be refused). KILL_RUNTIME (JSON) adds flow runtime
// options that retry or re-drive steps (`stepRetry`, `stepInterruptionsMax`); with
// KILL_TOOL_THROWS=1 the tool throws after its side effect (what a stepRetry would repeat).
// With KILL_PAIR set the model asks for two calls of the tool in one turn ({ n: 1 }, { n: 2 });
// with KILL_BLOCK set too, the call with n = 2 writes that marker file and then never returns
// (the test kills the process while it runs). With KILL_GATE set the policy asks a person about
// the call with n = 1 (a mixed turn); KILL_RESOLVE_APPROVAL picks the pending approval of that
// kind for KILL_RESOLVE.
// It prints one line: `result <json>` when the run ends, or `approval <json>` when it waits.
import { appendFileSync } from 'node:fs';
import { StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { createAgentRuntime, defineAgent, defineTool, type SideEffect } from '../../src/index.js';
import { decidePending, liveOneLife } from './worker-life.js';
import { openWorkerStore } from './worker-store.js';

const env = process.env as Record<string, string | undefined>;
const runId = env.KILL_RUN_ID as string;
const killAt = env.KILL_AT ?? '';
const invocations = env.KILL_INVOCATIONS as string;
const pair = env.KILL_PAIR !== undefined;
const blockMarker = env.KILL_BLOCK;

function die(): never {
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable: SIGKILL');
}

const act = defineTool({
  name: 'act',
  description: 'Do the thing once',
  input: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  sideEffect: env.KILL_SIDE_EFFECT as SideEffect,
  run: async (input, context) => {
    appendFileSync(invocations, `${context.idempotencyKey}\n`);
    if (killAt === 'mid_tool') die();
    if (env.KILL_TOOL_THROWS === '1') throw new Error('the gateway answered 502 after acting');
    const { n } = input as { n: number };
    if (n === 2 && blockMarker !== undefined) {
      appendFileSync(blockMarker, `${context.idempotencyKey}\n`);
      // Runs until the test kills the process.
      await new Promise(() => {});
    }
    return { done: n };
  },
});

// The answer depends on the prompt, not on a call count: a restarted process has a fresh stub.
const model = new StubModel({
  script: (request) =>
    request.messages.some((message) => message.role === 'tool')
      ? { text: 'finished' }
      : {
          toolCalls: pair
            ? [
                { tool: 'act', input: { n: 1 } },
                { tool: 'act', input: { n: 2 } },
              ]
            : [{ tool: 'act', input: { n: 1 } }],
        },
});
const agent = defineAgent({
  name: 'killable',
  model,
  instructions: 'Call act once, then say finished.',
  tools: [act],
  // Every class runs without asking: this test is about crashes, not the default policy. With
  // KILL_GATE set, the call with n = 1 waits for a person (a mixed turn).
  policy: (request) =>
    env.KILL_GATE !== undefined && (request.input as { n?: unknown }).n === 1
      ? { kind: 'require_approval', reason: 'n = 1 needs a person' }
      : { kind: 'allow' },
});

const store = await openWorkerStore('KILL');
const close = () => store.close();
// One life at a time drives this log, so a dead predecessor's run is recovered at once.
const runtimeOptions = env.KILL_RUNTIME === undefined ? {} : JSON.parse(env.KILL_RUNTIME);
const flows = createRuntime({ store, recoverQuietMs: 0, timerPollMs: 20, ...runtimeOptions });
const agents = createAgentRuntime({
  flows,
  agents: [agent],
  onTransition: (transition) => {
    if (transition.type === killAt) die();
  },
});

if (env.KILL_RESOLVE !== undefined) {
  const kind = env.KILL_RESOLVE_APPROVAL as 'tool_call' | 'interrupted_side_effect' | undefined;
  await decidePending(agents, runId, env.KILL_RESOLVE, kind);
}
const outcome = await liveOneLife(flows, agents, agent, runId);
process.stdout.write(`${outcome}\n`);
await flows.shutdown();
await close();
// A run left waiting keeps its result() promise, which keeps a process alive: this life is over.
process.exit(0);
