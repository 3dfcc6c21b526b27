import { EventType } from '@loom/event-runtime';
import type { ModelRequest } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { describe, expect, it } from 'vitest';
import { shown, stubBy } from './agent.test-support.js';
import { durableBackends } from './durable-backends.test-support.js';
import {
  type Agent,
  type AgentEvent,
  agentTool,
  createAgentRuntime,
  defineAgent,
  defineTool,
  isLoomError,
} from './index.js';

const { backends } = durableBackends('agent_tool');

/** A child agent that looks a word up with its own tool, then answers with what it found. */
function helperAgent(requests: ModelRequest[], calls: { lookups: number }): Agent {
  const lookup = defineTool({
    name: 'lookup',
    description: 'Look a word up',
    input: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
    sideEffect: 'read_only',
    run: async (input) => {
      calls.lookups += 1;
      return { meaning: `the meaning of ${(input as { word: string }).word}` };
    },
  });
  return defineAgent({
    name: 'helper',
    model: stubBy((n, request) => {
      requests.push(request);
      return n === 0
        ? { toolCalls: [{ tool: 'lookup', input: { word: 'loom' } }] }
        : { text: 'A loom weaves threads.' };
    }),
    instructions: 'Answer the task with the lookup tool.',
    tools: [lookup],
  });
}

describe.each(backends)('agent tools on %s', (_backend, openStore) => {
  it('result maps what the parent model sees of the child; the stream keeps the whole result; a mapping that throws is a tool_error', async () => {
    const store = await openStore('mapped');
    const flows = createRuntime({ store });
    try {
      const helper = helperAgent([], { lookups: 0 });
      const brief = agentTool(helper, {
        name: 'brief',
        result: (ended) => ({ answer: ended.output ?? null }),
      });
      const broken = agentTool(helper, {
        name: 'broken',
        result: () => {
          throw new Error('no summary for you');
        },
      });
      const parentRequests: ModelRequest[] = [];
      const boss = defineAgent({
        name: 'mapper',
        model: stubBy((n, request) => {
          parentRequests.push(request);
          return n === 0
            ? {
                toolCalls: [
                  { tool: 'brief', input: { task: 'What is a loom?' }, callId: 'a' },
                  { tool: 'broken', input: { task: 'What is a loom?' }, callId: 'b' },
                ],
              }
            : { text: 'done' };
        }),
        instructions: 'Delegate to the helper.',
        tools: [brief, broken],
      });
      const agents = createAgentRuntime({ flows, agents: [boss] });
      const result = await agents.run(boss, 'Explain looms', { runId: 'mapper-1' });
      expect(result.reason).toBe('goal_completed');

      const seen = shown(parentRequests[1]);
      const toolMessage = parentRequests[1]?.messages.find(
        (message) => message.role === 'tool' && message.callId === 'a',
      ) as { content: string } | undefined;
      expect(JSON.parse(toolMessage?.content ?? 'null')).toEqual({
        answer: 'A loom weaves threads.',
      });
      expect(seen).not.toContain('mapper-1/1.0');
      expect(seen).toContain("the result mapping of tool 'broken' threw: no summary for you");

      const events: AgentEvent[] = [];
      for await (const event of agents.stream('mapper-1')) events.push(event);
      // The two children run in parallel: they end in either order.
      const completed = events
        .filter((e) => e.type === 'tool_completed')
        .sort((x, y) => (x.callId < y.callId ? -1 : 1));
      expect(completed).toMatchObject([
        { callId: 'a', output: { runId: 'mapper-1/1.0', reason: 'goal_completed' } },
        { callId: 'b', output: { runId: 'mapper-1/1.1', reason: 'goal_completed' } },
      ]);
      expect(() => agentTool(helper, { result: 'answer' as never })).toThrow(
        /result must be a function/,
      );
    } finally {
      await flows.shutdown();
    }
  });

  it('the parent observes the child run, which is its own execution linked to the parent', async () => {
    const store = await openStore('linked');
    const flows = createRuntime({ store });
    try {
      const helperRequests: ModelRequest[] = [];
      const calls = { lookups: 0 };
      const helper = helperAgent(helperRequests, calls);
      const ask = agentTool(helper, { description: 'Ask the helper' });
      const parentRequests: ModelRequest[] = [];
      const boss = defineAgent({
        name: 'boss',
        model: stubBy((n, request) => {
          parentRequests.push(request);
          return n === 0
            ? { toolCalls: [{ tool: ask.name, input: { task: 'What is a loom?' }, callId: 'a' }] }
            : { text: 'The helper says: a loom weaves threads.' };
        }),
        instructions: 'Delegate to the helper.',
        tools: [ask],
      });
      // Only the parent is passed: its agent tool's agent is registered with it.
      const agents = createAgentRuntime({ flows, agents: [boss] });
      const result = await agents.run(boss, 'Explain looms', { runId: 'boss-1' });
      expect(result.reason).toBe('goal_completed');
      expect(result.turns).toBe(2);

      // The child's input was the task string, and its answer reached the parent's model.
      expect(shown(helperRequests[0])).toContain('What is a loom?');
      const seen = shown(parentRequests[1]);
      expect(seen).toContain('A loom weaves threads.');
      expect(seen).toContain('goal_completed');
      expect(seen).toContain('boss-1/1.0');
      expect(calls.lookups).toBe(1);

      // The child is its own run: its log starts linked to the parent, its result is its own.
      const childLog = await store.read('boss-1/1.0');
      expect(childLog[0]?.type).toBe(EventType.executionStarted);
      const started = childLog[0]?.payload as { parent?: { executionId: string } } | undefined;
      expect(started?.parent?.executionId).toBe('boss-1');
      const child = await agents.attach('boss-1/1.0').result();
      expect(child.reason).toBe('goal_completed');
      expect(child.output).toBe('A loom weaves threads.');
      expect(child.turns).toBe(2);
      // The parent's log records the child once, started then completed.
      const parentLog = await store.read('boss-1');
      expect(parentLog.filter((e) => e.type === EventType.childStarted)).toHaveLength(1);
      expect(parentLog.filter((e) => e.type === EventType.childCompleted)).toHaveLength(1);

      // The parent's stream shows the call like any tool's: started, then completed with the result.
      const events: AgentEvent[] = [];
      for await (const event of agents.stream('boss-1')) events.push(event);
      const toolStarted = events.filter((e) => e.type === 'tool_started');
      expect(toolStarted).toMatchObject([{ tool: ask.name, callId: 'a', turn: 1 }]);
      const completed = events.filter((e) => e.type === 'tool_completed');
      expect(completed).toMatchObject([
        {
          tool: ask.name,
          callId: 'a',
          outcome: 'result',
          output: {
            runId: 'boss-1/1.0',
            reason: 'goal_completed',
            output: 'A loom weaves threads.',
          },
        },
      ]);
    } finally {
      await flows.shutdown();
      await store.close();
    }
  });

  it("a child that gives up is the parent's tool result with its reason, and counts as a failure", async () => {
    const store = await openStore('gives-up');
    const flows = createRuntime({ store });
    try {
      const quitter = defineAgent({
        name: 'quitter',
        model: stubBy(() => ({ toolCalls: [{ tool: 'fail_goal', input: { reason: 'no data' } }] })),
        instructions: 'Give up.',
        tools: [],
      });
      const ask = agentTool(quitter, {
        name: 'ask_quitter',
        input: {
          type: 'object',
          properties: { topic: { type: 'string' } },
          required: ['topic'],
        },
      });
      const parentRequests: ModelRequest[] = [];
      const boss = defineAgent({
        name: 'boss-2',
        model: stubBy((n, request) => {
          parentRequests.push(request);
          return n === 0
            ? { toolCalls: [{ tool: 'ask_quitter', input: { topic: 'weather' } }] }
            : { text: 'It gave up.' };
        }),
        instructions: 'Delegate.',
        tools: [ask],
        limits: { consecutiveToolFailuresMax: 1 },
      });
      const agents = createAgentRuntime({ flows, agents: [boss] });
      const result = await agents.run(boss, 'go', { runId: 'boss-2' });
      // The child's goal_failed is a failed call: with a limit of 1 the parent ends there.
      expect(result.reason).toBe('limit_tool_failures');
      const child = await agents.attach('boss-2/1.0').result();
      expect(child.reason).toBe('goal_failed');
      expect(child.error).toBe('no data');
      // A custom input schema: the child's input is the arguments object.
      const childLog = await store.read('boss-2/1.0');
      const started = childLog[0]?.payload as { input?: unknown } | undefined;
      expect(started?.input).toEqual({ topic: 'weather' });
    } finally {
      await flows.shutdown();
      await store.close();
    }
  });
});

describe('agentTool', () => {
  it('names the tool after the agent; called outside a run, it refuses with INVALID_ARGUMENT', async () => {
    const helper = helperAgent([], { lookups: 0 });
    const tool = agentTool(helper);
    expect(tool.name).toBe('helper');
    expect(tool.sideEffect).toBe('idempotent');
    const error = await tool
      .run(
        { task: 'x' },
        {
          runId: 'r',
          turn: 1,
          callId: 'c',
          idempotencyKey: 'r/1.0',
          signal: new AbortController().signal,
        },
      )
      .catch((e: unknown) => e);
    expect(isLoomError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect(() => agentTool({} as Agent)).toThrow(/defineAgent/);
  });
});
