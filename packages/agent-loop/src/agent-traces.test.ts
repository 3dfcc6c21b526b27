// OpenTelemetry spans of agent runs, collected by the SDK's in-memory exporter: a model call, a
// policy and a tool call per turn, and the run, with the GenAI attributes, parented under the
// caller's active span. A run that waits for an approval and is resumed by another runtime emits
// each span once: the resumed runtime replays the recorded turn and makes spans only for what it
// runs.
import { InMemoryEventStore } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { createRuntime } from '@loom/workflow-runtime';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eventually, stubBy } from './agent.test-support.js';
import { createAgentRuntime, defineAgent, defineTool, isLoomError } from './index.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('loom-agent-test');
const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(() => {
  contextManager.disable();
  context.disable();
});
beforeEach(() => exporter.reset());

const names = (spans: readonly ReadableSpan[]) => spans.map((span) => span.name).sort();

const lookup = defineTool({
  name: 'lookup',
  description: 'Look an order up',
  input: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  sideEffect: 'read_only',
  run: async (input) => ({ id: (input as { id: string }).id, status: 'shipped' }),
});
const refund = defineTool({
  name: 'refund',
  description: 'Refund an order',
  input: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  sideEffect: 'remote_mutation',
  run: async () => {
    throw new Error('the gateway said no');
  },
});

describe('agent traces', () => {
  it('each turn: a chat span with the GenAI attributes, a policy span, a tool span; the run; all under the caller', async () => {
    const agent = defineAgent({
      name: 'support',
      model: stubBy((n) =>
        n === 0 ? { toolCalls: [{ tool: 'lookup', input: { id: 'A-1' } }] } : { text: 'shipped' },
      ),
      instructions: '',
      tools: [lookup],
    });
    const clock = new ManualClock();
    const flows = createRuntime({ store: new InMemoryEventStore({ clock }), clock });
    const agents = createAgentRuntime({ flows, agents: [agent], tracer });
    const outer = tracer.startSpan('http POST /tickets');
    const result = await context.with(trace.setSpan(context.active(), outer), () =>
      agents.run(agent, 'where is A-1?', { runId: 't1' }),
    );
    outer.end();
    expect(result.reason).toBe('goal_completed');

    const spans = exporter.getFinishedSpans();
    expect(names(spans)).toEqual([
      'chat stub',
      'chat stub',
      'execute_tool lookup',
      'http POST /tickets',
      'invoke_agent support',
      'loom.policy support',
    ]);
    const outerId = outer.spanContext().spanId;
    for (const span of spans.filter((s) => s.name !== 'http POST /tickets')) {
      expect(span.parentSpanContext?.spanId, span.name).toBe(outerId);
      expect(span.attributes['loom.run_id'], span.name).toBe('t1');
    }
    const chats = spans.filter((s) => s.name.startsWith('chat '));
    expect(chats.map((s) => s.attributes['loom.turn'])).toEqual([1, 2]);
    expect(chats[0]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.agent.name': 'support',
      'gen_ai.response.model': 'stub-model',
      'gen_ai.response.finish_reasons': ['tool_calls'],
    });
    expect(typeof chats[0]?.attributes['gen_ai.usage.input_tokens']).toBe('number');
    expect(spans.find((s) => s.name === 'execute_tool lookup')?.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'lookup',
      'loom.side_effect': 'read_only',
      'loom.turn': 1,
    });
    expect(spans.find((s) => s.name === 'loom.policy support')?.attributes).toMatchObject({
      'loom.policy.verdicts': ['allow'],
    });
    expect(spans.find((s) => s.name === 'invoke_agent support')?.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'loom.terminal_reason': 'goal_completed',
      'loom.turn': 2,
    });
  });

  it('a run resumed by another runtime after its approval makes each span once; a tool that throws is an error span', async () => {
    const agent = defineAgent({
      name: 'refunder',
      model: stubBy((_n, request) =>
        request.messages.some((m) => m.role === 'tool')
          ? { text: 'could not refund' }
          : { toolCalls: [{ tool: 'refund', input: { id: 'A-2' } }] },
      ),
      instructions: '',
      tools: [refund],
    });
    const clock = new ManualClock();
    const store = new InMemoryEventStore({ clock });
    const first = createRuntime({ store, clock, timerPollMs: 0 });
    const firstAgents = createAgentRuntime({ flows: first, agents: [agent], tracer });
    await firstAgents.start(agent, 'refund A-2', { runId: 't2' });
    const approval = await eventually(
      async () => (await firstAgents.approvals('t2')).find((a) => a.status === 'pending'),
      'the refund approval',
    );
    await first.shutdown();
    expect(names(exporter.getFinishedSpans())).toEqual(['chat stub', 'loom.policy refunder']);

    const second = createRuntime({ store, clock, timerPollMs: 0 });
    try {
      const agents = createAgentRuntime({ flows: second, agents: [agent], tracer });
      await agents.approve(approval.id, { by: 'ana' });
      await second.recover();
      await second.wakeDue();
      const result = await agents.attach('t2').result();
      expect(result.reason).toBe('goal_completed');
    } finally {
      await second.shutdown();
    }
    const spans = exporter.getFinishedSpans();
    // Turn 1's model call and policy were recorded by the first runtime: not made again.
    expect(names(spans)).toEqual([
      'chat stub',
      'chat stub',
      'execute_tool refund',
      'invoke_agent refunder',
      'loom.policy refunder',
    ]);
    const tool = spans.find((s) => s.name === 'execute_tool refund');
    expect(tool?.status.code).toBe(2);
    expect(tool?.attributes['error.type']).toBe('Error');
    expect(tool?.events.map((e) => e.name)).toEqual(['exception']);
  });

  it('a tracer that is not one is INVALID_ARGUMENT', () => {
    const flows = createRuntime({ store: new InMemoryEventStore() });
    let caught: unknown;
    try {
      createAgentRuntime({ flows, agents: [], tracer: {} as never });
    } catch (error) {
      caught = error;
    }
    expect(isLoomError(caught, 'INVALID_ARGUMENT')).toBe(true);
  });
});
