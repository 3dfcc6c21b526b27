// One life of a process running a parent agent ('boss') whose tool runs a child agent
// ('helper') as a child run, on the SQLite file AT_DB (or, with AT_BACKEND=postgres, the schema
// AT_SCHEMA of AT_PG_URL). The helper's `lookup` tool appends a line
// to AT_LOOKUPS per call, the helper's model a line to AT_MODEL_CALLS per call. AT_KILL makes it
// SIGKILL itself: `child_tool` inside the child's tool (after its line), `parent_observed` once
// the parent has recorded the child's result (when its next turn starts), `child_recorded` once
// the parent's `child.started` is durable. Prints `result <json>`.
import { appendFileSync } from 'node:fs';
import type { EventStore } from '@loom/event-runtime';
import { type ModelRequest, StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { agentTool, createAgentRuntime, defineAgent, defineTool } from '../../src/index.js';
import { liveOneLife } from '../kill/worker-life.js';
import { openWorkerStore } from '../kill/worker-store.js';

const env = process.env as Record<string, string | undefined>;
const runId = env.AT_RUN_ID as string;
const killAt = env.AT_KILL ?? '';

function die(): never {
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable: SIGKILL');
}

/** The content of the request's tool message, if it has one (answers depend on the prompt, not on a count). */
function toolAnswer(request: ModelRequest): string | undefined {
  const message = request.messages.find((m) => m.role === 'tool');
  return message === undefined ? undefined : JSON.stringify(message);
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a word up',
  input: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
  sideEffect: 'read_only',
  run: async (input, context) => {
    appendFileSync(env.AT_LOOKUPS as string, `${context.runId}\n`);
    if (killAt === 'child_tool') die();
    return { meaning: `the meaning of ${(input as { word: string }).word}` };
  },
});
const helper = defineAgent({
  name: 'helper',
  model: new StubModel({
    script: (request) => {
      appendFileSync(env.AT_MODEL_CALLS as string, 'call\n');
      return toolAnswer(request) === undefined
        ? { toolCalls: [{ tool: 'lookup', input: { word: 'loom' } }] }
        : { text: 'A loom weaves threads.' };
    },
  }),
  instructions: 'Answer with the lookup tool.',
  tools: [lookup],
});
const ask = agentTool(helper);
const boss = defineAgent({
  name: 'boss',
  model: new StubModel({
    script: (request) => {
      const answer = toolAnswer(request);
      return answer === undefined
        ? { toolCalls: [{ tool: ask.name, input: { task: 'What is a loom?' } }] }
        : { text: `boss saw ${answer}` };
    },
  }),
  instructions: 'Delegate to the helper.',
  tools: [ask],
});

const opened = await openWorkerStore('AT');
// `child_recorded`: die as soon as the parent's `child.started` is durable, before the child's
// own execution is started (the kernel's barrier, then its launch).
const store = new Proxy(opened, {
  get(target, property) {
    const value = Reflect.get(target, property, target);
    if (typeof value !== 'function') return value;
    if (property !== 'append' || killAt !== 'child_recorded') return value.bind(target);
    return async (...args: Parameters<EventStore['append']>) => {
      const stored = await target.append(...args);
      if (args[0].some((envelope) => envelope.type === 'child.started')) die();
      return stored;
    };
  },
});
// One life at a time drives this file, so a dead predecessor's runs are recovered at once.
const flows = createRuntime({ store, recoverQuietMs: 0, timerPollMs: 20 });
const agents = createAgentRuntime({
  flows,
  agents: [boss],
  onTransition: (transition) => {
    if (
      killAt === 'parent_observed' &&
      transition.type === 'observed' &&
      transition.runId === runId
    ) {
      die();
    }
  },
});
const outcome = await liveOneLife(flows, agents, boss, runId);
console.log(outcome);
await flows.shutdown();
await opened.close();
