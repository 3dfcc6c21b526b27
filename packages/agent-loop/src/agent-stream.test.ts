// stream(runId), per-call usage, the consumers' own copies of the run, and a turn's store work
// (memory store, ManualClock).
import { InMemoryEventStore } from '@loom/event-runtime';
import { CountingEventStore, ManualClock } from '@loom/event-runtime/testing';
import { createRouter, type ModelProvider, StubModel, type StubTurn } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { eventually, harness, type JsonValue, scripted, shown } from './agent.test-support.js';
import {
  type AgentEvent,
  type AgentStream,
  createAgentRuntime,
  defaultPrompt,
  defineAgent,
  defineTool,
  type Policy,
} from './index.js';

const lookup = defineTool({
  name: 'lookup',
  description: 'Look an order up',
  input: z.object({ id: z.string() }),
  sideEffect: 'read_only',
  run: async (input) => ({ id: (input as { id: string }).id, status: 'shipped' }),
});

const mailer = defineTool({
  name: 'send_mail',
  description: 'Send a mail',
  input: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
  sideEffect: 'remote_mutation',
  run: async () => 'sent',
});

function words(n: number): string {
  return Array.from({ length: n }, (_, i) => `word${i}`).join(' ');
}

/** Every event of a stream, to its end (bounded: a stream that never ends fails the test). */
async function drain(stream: AgentStream, max = 10_000): Promise<AgentEvent[]> {
  const out: AgentEvent[] = [];
  for await (const event of stream) {
    out.push(event);
    if (out.length > max) throw new Error(`more than ${max} events`);
  }
  return out;
}

describe('stream(runId)', () => {
  it('yields the turn events in order, the text coalesced, and ends with finished', async () => {
    const text = words(200);
    const model = scripted({ toolCalls: [{ tool: 'lookup', input: { id: 'A-1' } }] }, { text });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [lookup] });
    const { agents } = harness([agent]);
    // Followed before it starts: the stream waits for the run to appear.
    const stream = agents.stream('r1');
    const events = drain(stream);
    const result = await agents.run(agent, 'where is A-1?', { runId: 'r1' });
    const seen = await events;
    const deltas = seen.filter((e) => e.type === 'text_delta');
    expect(seen.filter((e) => e.type !== 'text_delta').map((e) => e.type)).toEqual([
      'turn_started',
      'model_responded',
      'tool_started',
      'tool_completed',
      'turn_started',
      'model_responded',
      'finished',
    ]);
    // 200 words streamed by the stub as 200 deltas reach the consumer as one chunk.
    expect(deltas.map((e) => (e.type === 'text_delta' ? e.text : '')).join('')).toBe(text);
    expect(deltas).toHaveLength(1);
    // The text comes after its turn started and before the recorded answer.
    const types = seen.map((e) => e.type);
    expect(types.indexOf('text_delta')).toBe(types.lastIndexOf('turn_started') + 1);
    expect(seen.every((e) => e.replayed === false)).toBe(true);
    const tool = seen.find((e) => e.type === 'tool_completed');
    expect(tool).toMatchObject({
      turn: 1,
      tool: 'lookup',
      outcome: 'result',
      output: { id: 'A-1', status: 'shipped' },
    });
    expect(seen.at(-1)).toMatchObject({ type: 'finished', result });
  });

  it('coalesces per turn of I/O: text that arrives in three bursts reaches the consumer as three chunks', async () => {
    const stub = scripted({ text: words(30) });
    // A provider whose text arrives in three bursts of ten deltas, one turn of I/O apart (as
    // network reads would), then the stub's own finish.
    const model: ModelProvider = {
      id: 'bursty',
      generate: (request) => stub.generate(request),
      async *stream(request) {
        let n = 0;
        for await (const delta of stub.stream(request)) {
          if (delta.type === 'text' && n > 0 && n % 10 === 0) {
            await new Promise((resolve) => setImmediate(resolve));
          }
          if (delta.type === 'text') n++;
          yield delta;
        }
      },
    };
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [] });
    const { agents } = harness([agent]);
    const events = drain(agents.stream('r'));
    await agents.run(agent, 'go', { runId: 'r' });
    const chunks = (await events).flatMap((e) => (e.type === 'text_delta' ? [e.text] : []));
    expect(chunks).toHaveLength(3);
    expect(chunks.join('')).toBe(words(30));
  });

  it('never journals the deltas: the log has as many events for 5 words as for 500', async () => {
    async function logSize(text: string): Promise<number> {
      const agent = defineAgent({
        name: 'a',
        model: scripted({ text }),
        instructions: '',
        tools: [],
      });
      const { agents, flows } = harness([agent]);
      const stream = agents.stream('r');
      const events = drain(stream);
      await agents.run(agent, 'go', { runId: 'r' });
      expect((await events).some((e) => e.type === 'text_delta')).toBe(true);
      return (await flows.store.read('r')).length;
    }
    expect(await logSize(words(500))).toBe(await logSize(words(5)));
  });

  it('a stream opened after the end replays the log, flagged, once, in order', async () => {
    const model = scripted({ toolCalls: [{ tool: 'lookup', input: { id: 'A' } }] }, { text: 'ok' });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [lookup] });
    const { agents } = harness([agent]);
    await agents.run(agent, 'go', { runId: 'r1' });
    const replayed = await drain(agents.stream('r1'));
    expect(replayed.every((e) => e.replayed)).toBe(true);
    expect(replayed.some((e) => e.type === 'text_delta')).toBe(false);
    const sequences = replayed.map((e) => e.sequence as number);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(sequences).size).toBe(sequences.length);
    expect(replayed.at(-1)).toMatchObject({
      type: 'finished',
      result: { reason: 'goal_completed' },
    });
  });

  it('follows a waiting run: the history replayed, then what happens after live', async () => {
    const model = scripted(
      { toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] },
      { text: 'mailed' },
    );
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [mailer] });
    const { agents, flows } = harness([agent]);
    const run = await agents.start(agent, 'mail ana', { runId: 'r1' });
    const [approval] = await eventually(async () => {
      const pending = (await agents.approvals('r1')).filter((a) => a.status === 'pending');
      return pending.length > 0 ? pending : undefined;
    }, 'a pending approval');
    const stream = agents.stream(run);
    const first = await stream.next();
    expect(first.value).toMatchObject({ type: 'turn_started', turn: 1, replayed: true });
    const history: AgentEvent[] = [first.value as AgentEvent];
    while (history.at(-1)?.type !== 'approval_required') {
      history.push((await stream.next()).value as AgentEvent);
    }
    expect(history.map((e) => [e.type, e.replayed])).toEqual([
      ['turn_started', true],
      ['model_responded', true],
      ['approval_required', true],
    ]);
    expect(history[2]).toMatchObject({ approval: { id: approval?.id, status: 'pending' } });
    await agents.approve(approval?.id as string, { by: 'ops' });
    await flows.wakeDue();
    const rest = await drain(stream);
    expect(rest.map((e) => [e.type, e.replayed])).toEqual([
      ['tool_started', false],
      ['tool_completed', false],
      ['turn_started', false],
      ['text_delta', false],
      ['model_responded', false],
      ['finished', false],
    ]);
    expect(rest.at(-1)).toMatchObject({ result: { reason: 'goal_completed', output: 'mailed' } });
  });

  it('close() stops a stream of a run that has not ended', async () => {
    const model = scripted({ toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [mailer] });
    const { agents } = harness([agent]);
    await agents.start(agent, 'mail ana', { runId: 'r1' });
    const stream = agents.stream('r1');
    for await (const event of stream) {
      if (event.type === 'approval_required') break; // leaving the loop closes it
    }
    expect(await stream.next()).toEqual({ done: true, value: undefined });
  });

  it('a cancelled run finishes its stream with operator_cancelled', async () => {
    const model = scripted({ toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [mailer] });
    const { agents } = harness([agent]);
    const run = await agents.start(agent, 'mail ana', { runId: 'r1' });
    const events = drain(agents.stream('r1'));
    await eventually(
      async () => ((await agents.approvals('r1')).length > 0 ? true : undefined),
      'an approval',
    );
    await agents.cancel('r1', { by: 'ops' });
    const result = await run.result();
    // The turn decided before the cancel counts: its call and usage are read from the log.
    expect(result).toMatchObject({
      reason: 'operator_cancelled',
      turns: 1,
      calls: [{ turn: 1, provider: 'stub' }],
      usage: { modelCalls: 1 },
    });
    expect((await events).at(-1)).toMatchObject({ type: 'finished', result });
  });
});

describe('usage per model call and per run', () => {
  it('RunResult.calls and each model_responded carry tokens, cost, latency and fallbacks', async () => {
    const clock = new ManualClock();
    const down = new StubModel({
      id: 'down',
      clock,
      script: [{ fail: { code: 'MODEL_UNAVAILABLE' } }, { fail: { code: 'MODEL_UNAVAILABLE' } }],
    });
    const turns: StubTurn[] = [
      { toolCalls: [{ tool: 'lookup', input: { id: 'A' } }], latencyMs: 0 },
      { text: 'done', latencyMs: 0 },
    ];
    const up = new StubModel({
      id: 'up',
      clock,
      script: turns,
      prices: { 'stub-model': { inputUsdPerMTok: 1_000_000, outputUsdPerMTok: 2_000_000 } },
    });
    const model = createRouter([
      { provider: down, tags: [] },
      { provider: up, tags: [] },
    ]);
    const agent = defineAgent({ name: 'a', model, instructions: 'be brief', tools: [lookup] });
    const flows = createRuntime({ store: new InMemoryEventStore({ clock }), clock });
    const agents = createAgentRuntime({ flows, agents: [agent] });
    const events = drain(agents.stream('r1'));
    const result = await agents.run(agent, 'go', { runId: 'r1' });
    expect(result.calls).toHaveLength(2);
    // The recorded output keeps the sums only: it does not grow with the run.
    const completed = (await flows.store.read('r1')).find((e) => e.type === 'execution.completed');
    const recorded = (completed?.payload as { output?: object } | undefined)?.output;
    expect(recorded).toMatchObject({ usage: { modelCalls: 2 } });
    expect(Object.keys(recorded ?? {})).not.toContain('calls');
    for (const [n, call] of result.calls.entries()) {
      expect(call).toMatchObject({ turn: n + 1, provider: 'up', route: 'up' });
      expect(call.fallbacks).toEqual([
        { route: 'down', code: 'MODEL_UNAVAILABLE', message: expect.any(String) },
      ]);
      expect(call.inputTokens).toBeGreaterThan(0);
      expect(call.costUsd).toBe((call.inputTokens as number) + 2 * (call.outputTokens as number));
    }
    const sum = (pick: (c: (typeof result.calls)[number]) => number) =>
      result.calls.reduce((total, call) => total + pick(call), 0);
    expect(result.usage).toEqual({
      modelCalls: 2,
      inputTokens: sum((c) => c.inputTokens ?? 0),
      outputTokens: sum((c) => c.outputTokens ?? 0),
      cachedInputTokens: sum((c) => c.cachedInputTokens ?? 0),
      costUsd: sum((c) => c.costUsd ?? 0),
      costUnknownCalls: 0,
      latencyMs: sum((c) => c.latencyMs),
      fallbacks: 2,
    });
    const responded = (await events).flatMap((e) =>
      e.type === 'model_responded' ? [e.usage] : [],
    );
    expect(responded).toEqual(result.calls);
  });
});

describe('each consumer gets its own copy of the run', () => {
  it('a prompt function editing its history or input changes nothing for the policy or later turns', async () => {
    const seenByPolicy: number[] = [];
    const inputSeen: JsonValue[] = [];
    const policy: Policy = (_request, view) => {
      seenByPolicy.push(view.turns.length);
      inputSeen.push(view.input);
      try {
        (view.input as { order: string }).order = 'changed by the policy';
      } catch {
        // frozen: the write fails, and nothing elsewhere changes
      }
      return { kind: 'allow' };
    };
    const histories: number[] = [];
    const agent = defineAgent({
      name: 'a',
      model: scripted(
        { toolCalls: [{ tool: 'lookup', input: { id: 'A' } }] },
        { toolCalls: [{ tool: 'lookup', input: { id: 'B' } }] },
        { toolCalls: [{ tool: 'lookup', input: { id: 'C' } }] },
        { text: 'done' },
      ),
      instructions: '',
      tools: [lookup],
      policy,
      prompt: (parts) => {
        histories.push(parts.history.length);
        const node = defaultPrompt({ ...parts, history: [...parts.history] });
        // The prompt's own copy: emptying it must not reach the run's memory.
        (parts.history as unknown[]).length = 0;
        try {
          (parts.input as { order: string }).order = 'changed by the prompt';
        } catch {
          // frozen
        }
        return node;
      },
    });
    const { agents } = harness([agent]);
    const result = await agents.run(agent, { order: 'A-17' });
    expect(result.reason).toBe('goal_completed');
    expect(histories).toEqual([0, 1, 2, 3]);
    expect(seenByPolicy).toEqual([0, 1, 2]);
    expect(inputSeen).toEqual([{ order: 'A-17' }, { order: 'A-17' }, { order: 'A-17' }]);
  });

  it('the input the caller passed is not the one the run holds', async () => {
    const input = { order: 'A-17' };
    const model = scripted({ toolCalls: [{ tool: 'lookup', input: { id: 'A' } }] }, { text: 'ok' });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [lookup] });
    const { agents } = harness([agent]);
    const run = await agents.start(agent, input, { runId: 'r' });
    input.order = 'changed by the caller';
    await run.result();
    expect(shown(model.requests[1])).toContain('A-17');
    expect(shown(model.requests[1])).not.toContain('changed by the caller');
  });
});

describe("a turn's store work", () => {
  /** Store calls of a run that makes `toolTurns` tool turns, then answers. */
  async function countsOf(toolTurns: number) {
    const clock = new ManualClock();
    const store = new CountingEventStore(new InMemoryEventStore({ clock }));
    const model = new StubModel({
      script: (_request, n) =>
        n < toolTurns
          ? { toolCalls: [{ tool: 'lookup', input: { id: `o-${n}` } }] }
          : { text: 'done' },
    });
    const agent = defineAgent({
      name: 'a',
      model,
      instructions: '',
      tools: [lookup],
      limits: { stepsMax: 1_000 },
    });
    const flows = createRuntime({ store, clock });
    const agents = createAgentRuntime({ flows, agents: [agent] });
    const result = await agents.run(agent, 'go', { runId: 'r' });
    expect(result).toMatchObject({ reason: 'goal_completed', turns: toolTurns + 1 });
    return { ...store.counts };
  }

  it('a result in the process that ran the run takes its calls from the flow and reads no log; attached elsewhere it reads them, the same', async () => {
    const clock = new ManualClock();
    const store = new CountingEventStore(new InMemoryEventStore({ clock }));
    const model = new StubModel({
      script: (_request, n) =>
        n < 2 ? { toolCalls: [{ tool: 'lookup', input: { id: `o-${n}` } }] } : { text: 'done' },
    });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [lookup] });
    const flows = createRuntime({ store, clock });
    const agents = createAgentRuntime({ flows, agents: [agent] });
    const run = await agents.start(agent, 'go', { runId: 'r' });
    const readsBefore = store.counts.reads;
    const result = await run.result();
    expect(result.calls.map((call) => call.turn)).toEqual([1, 2, 3]);
    expect(store.counts.reads).toBe(readsBefore);

    // Another runtime over the same store never ran it: it reads the calls from the log.
    const other = createAgentRuntime({ flows: createRuntime({ store, clock }), agents: [agent] });
    const attached = await other.attach('r').result();
    expect(store.counts.reads).toBeGreaterThan(readsBefore);
    expect(attached).toEqual(result);
  });

  it('is the same per turn in a run of 10 turns as in one of 100', async () => {
    const base = await countsOf(0);
    const ten = await countsOf(10);
    const hundred = await countsOf(100);
    for (const key of Object.keys(base) as (keyof typeof base)[]) {
      const perTurnAt10 = (ten[key] - base[key]) / 10;
      const perTurnAt100 = (hundred[key] - base[key]) / 100;
      expect({ key, perTurn: perTurnAt100 }).toEqual({ key, perTurn: perTurnAt10 });
    }
    expect(ten.reads).toBe(base.reads);
    expect((hundred.appends - base.appends) / 100).toBeGreaterThan(0);
  });
});
