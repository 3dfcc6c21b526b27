// Structured output: an agent with an `output` schema ends with JSON that fits it, typed by it.
// An answer that is not JSON or does not fit is re-asked with what was wrong (each answer is a
// recorded model call), up to limits.outputAttemptsMax answers, then the run ends
// output_invalid. The model is told the schema, in its instructions and as responseFormat. On the
// memory store and on SQLite and Postgres (the run resumed from its log by another runtime).

import { until } from '@loom/event-runtime/testing';
import type { ModelProvider } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { harness, scripted, shown } from './agent.test-support.js';
import { durableBackends } from './durable-backends.test-support.js';
import { createAgentRuntime, defineAgent, isLoomError } from './index.js';

const paint = z.object({ colour: z.string(), hex: z.string().regex(/^#[0-9a-f]{6}$/) });

function painter(...answers: string[]) {
  const model = scripted(...answers.map((text) => ({ text })));
  const agent = defineAgent({
    name: 'painter',
    model,
    instructions: 'Pick a colour.',
    tools: [],
    output: paint,
  });
  return { model, agent };
}

describe('structured output', () => {
  it('re-asks an answer that is not JSON, then one that does not fit, and ends with the typed JSON', async () => {
    const { model, agent } = painter(
      'I would go with teal.',
      '{"colour":"teal","hex":"008080"}',
      '```json\n{"colour":"teal","hex":"#008080"}\n```',
    );
    const { agents } = harness([agent]);
    const result = await agents.run(agent, 'the front door', { runId: 'p1' });
    expect(result).toMatchObject({
      reason: 'goal_completed',
      output: { colour: 'teal', hex: '#008080' },
      turns: 3,
    });
    expectTypeOf(result.output).toEqualTypeOf<{ colour: string; hex: string } | undefined>();

    const [first, second, third] = model.requests;
    // Told the schema: in the instructions (every prompt) and as the provider's response format.
    expect(first?.messages[0]?.content).toContain('answer with JSON only');
    expect(first?.messages[0]?.content).toContain('"hex"');
    expect(first?.responseFormat).toMatchObject({ type: 'json', name: 'answer' });
    expect(first?.responseFormat?.schema).toMatchObject({
      properties: { hex: { type: 'string' } },
    });
    expect(shown(second)).toContain('it did not: it is not JSON');
    expect(shown(third)).toContain('hex');
    expect(shown(third)).toMatch(/did not: hex: /);
  });

  it('past outputAttemptsMax answers that do not fit, the run ends output_invalid naming the last problem', async () => {
    const model = scripted({ text: '{"colour":"red"}' });
    const agent = defineAgent({
      name: 'stubborn',
      model,
      instructions: '',
      tools: [],
      output: paint,
      limits: { outputAttemptsMax: 2 },
    });
    const { agents } = harness([agent]);
    const result = await agents.run(agent, 'go', { runId: 'p2' });
    expect(result.reason).toBe('output_invalid');
    expect(result.error).toMatch(/^2 final answers did not fit the output schema; the last: hex: /);
    expect(result.turns).toBe(2);
    expect(result.output).toBeUndefined();
  });

  it('a JSON Schema output: plain JSON values; an agent without output still ends with its text', async () => {
    const agent = defineAgent({
      name: 'counter',
      model: scripted({ text: '[1, 2, 3]' }),
      instructions: '',
      tools: [],
      output: { type: 'array', items: { type: 'integer' } },
    });
    const plain = defineAgent({
      name: 'talker',
      model: scripted({ text: 'hello' }),
      instructions: '',
      tools: [],
    });
    const { agents } = harness([agent, plain]);
    expect((await agents.run(agent, 'count')).output).toEqual([1, 2, 3]);
    const said = await agents.run(plain, 'talk');
    expect(said.output).toBe('hello');
    expectTypeOf(said.output).toEqualTypeOf<string | undefined>();
  });

  it('an output that is not a schema is INVALID_ARGUMENT naming the option', () => {
    let caught: unknown;
    try {
      defineAgent({
        name: 'bad',
        model: scripted({ text: '' }),
        instructions: '',
        tools: [],
        output: 'json' as never,
      });
    } catch (error) {
      caught = error;
    }
    expect(isLoomError(caught, 'INVALID_ARGUMENT')).toBe(true);
    expect((caught as Error).message).toContain("agent 'bad': 'output' must be a Standard Schema");
  });
});

const { backends } = durableBackends('structured_output');

describe.each(backends)('structured output on %s', (_backend, openStore) => {
  it('a run resumed from its log by another runtime checks the recorded answers the same way', async () => {
    const store = await openStore('resumed');
    // The first runtime records a refused answer, then stops before the next model call ends.
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let calls = 0;
    const inner = scripted({ text: 'teal!' }, { text: '{"colour":"teal","hex":"#008080"}' });
    const gated = async () => {
      calls += 1;
      if (calls === 2) await held;
    };
    const model: ModelProvider = {
      id: 'held',
      async generate(request) {
        await gated();
        return inner.generate(request);
      },
      async *stream(request) {
        await gated();
        yield* inner.stream(request);
      },
    };
    const slow = defineAgent({
      name: 'painter',
      model,
      instructions: 'Pick a colour.',
      tools: [],
      output: paint,
    });
    const first = createRuntime({ store });
    const firstAgents = createAgentRuntime({ flows: first, agents: [slow] });
    await firstAgents.start(slow, 'the door', { runId: 'door' });
    await until(() => calls === 2, 'the second model call to start');
    // Stopped while the second answer is on its way: it may or may not be recorded.
    const stopped = first.shutdown();
    release();
    await stopped;

    const { agent } = painter('{"colour":"teal","hex":"#008080"}');
    const second = createRuntime({ store });
    try {
      const agents = createAgentRuntime({ flows: second, agents: [agent] });
      await second.recover();
      const result = await agents.attach('door').result();
      expect(result).toMatchObject({
        reason: 'goal_completed',
        output: { colour: 'teal', hex: '#008080' },
        turns: 2,
      });
    } finally {
      await second.shutdown();
    }
  });
});
