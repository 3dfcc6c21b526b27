// A tool's retry follows its side-effect class, never the flow runtime's `stepRetry`: under
// `createRuntime({ stepRetry: { attempts: 3 } })` a remote_mutation tool that throws after its
// side effect, or runs past its timeoutMs (its outcome unknown), is called exactly once; a
// read_only tool retries as the agent's `toolRetry` says. Calls are counted in a file the tool
// writes. On a SQLite file and on Postgres.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { type EventStore, EventType } from '@loom/event-runtime';
import { createRuntime } from '@loom/workflow-runtime';
import { describe, expect, it } from 'vitest';
import { stubBy } from './agent.test-support.js';
import { callsIn, durableBackends } from './durable-backends.test-support.js';
import {
  type Agent,
  createAgentRuntime,
  defineAgent,
  defineTool,
  isLoomError,
  type SideEffect,
  type Tool,
} from './index.js';

const { dir, backends } = durableBackends('tool_retry');
let cases = 0;

/** A tool that writes its call to `file`, then fails: by throwing, or by outliving its timeout. */
function sideEffectThenFail(
  sideEffect: SideEffect,
  file: string,
  how: 'throws' | 'times_out',
): Tool<never> {
  return defineTool({
    name: 'refund',
    description: 'Refund the order',
    input: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
    sideEffect,
    timeoutMs: 50,
    run: async (_input, context) => {
      appendFileSync(file, `${context.idempotencyKey}\n`);
      if (how === 'throws') throw new Error('the gateway answered 502 after charging');
      // Past the timeout: the runtime aborts the call, whose outcome is then unknown.
      await new Promise((_, reject) =>
        context.signal.addEventListener('abort', () => reject(context.signal.reason)),
      );
      return null;
    },
  }) as Tool<never>;
}

function agentWith(tool: Tool<never>, options: Partial<Parameters<typeof defineAgent>[0]> = {}) {
  return defineAgent({
    name: 'refunds',
    model: stubBy((_n, request) =>
      request.messages.some((m) => m.role === 'tool')
        ? { text: 'done' }
        : { toolCalls: [{ tool: 'refund', input: { order: 'o-1' } }] },
    ),
    instructions: 'Refund order o-1.',
    tools: [tool],
    policy: () => ({ kind: 'allow' }),
    ...options,
  });
}

async function runOnce(store: EventStore, agent: Agent, runId: string) {
  const flows = createRuntime({
    store,
    stepRetry: { attempts: 3, backoff: { initialMs: 1, jitter: 'none' } },
  });
  try {
    const agents = createAgentRuntime({ flows, agents: [agent] });
    const result = await agents.run(agent, 'refund o-1', { runId });
    const events = await store.read(runId);
    return { result, events };
  } finally {
    await flows.shutdown();
  }
}

describe.each(backends)('tool retry under a runtime-wide stepRetry on %s', (_name, openStore) => {
  for (const how of ['throws', 'times_out'] as const) {
    it(`a remote_mutation tool that ${how === 'throws' ? 'throws after its side effect' : 'runs past its timeoutMs'} is called exactly once`, async () => {
      const name = `remote-${how}-${cases++}`;
      const file = join(dir, `${name}.calls`);
      const store = await openStore(name);
      try {
        const { result, events } = await runOnce(
          store,
          agentWith(sideEffectThenFail('remote_mutation', file, how)),
          `run-${name}`,
        );
        expect(callsIn(file)).toBe(1);
        // The failure is the model's observation; the run goes on and completes.
        expect(result.reason).toBe('goal_completed');
        expect(events.filter((e) => e.type === EventType.stepAttemptFailed)).toHaveLength(0);
      } finally {
        await store.close();
      }
    });
  }

  it("a read_only tool retries as the agent's toolRetry says", async () => {
    const name = `read-only-${cases++}`;
    const file = join(dir, `${name}.calls`);
    const store = await openStore(name);
    try {
      const { result } = await runOnce(
        store,
        agentWith(sideEffectThenFail('read_only', file, 'throws'), {
          toolRetry: { attempts: 2, backoff: { initialMs: 1, jitter: 'none' } },
        }),
        `run-${name}`,
      );
      expect(callsIn(file)).toBe(2);
      expect(result.reason).toBe('goal_completed');
    } finally {
      await store.close();
    }
  });

  it('a read_only tool without toolRetry is called once: the runtime default is not a tool policy', async () => {
    const name = `read-only-default-${cases++}`;
    const file = join(dir, `${name}.calls`);
    const store = await openStore(name);
    try {
      await runOnce(
        store,
        agentWith(sideEffectThenFail('read_only', file, 'throws')),
        `run-${name}`,
      );
      expect(callsIn(file)).toBe(1);
    } finally {
      await store.close();
    }
  });
});

describe.each(backends)(
  "the run's own steps under a runtime-wide stepRetry on %s",
  (_name, openStore) => {
    it('a failed model call is retried and announces the turn once; the records are written once', async () => {
      const name = `model-retry-${cases++}`;
      const file = join(dir, `${name}.calls`);
      const store = await openStore(name);
      const flows = createRuntime({
        store,
        stepRetry: { attempts: 3, backoff: { initialMs: 1, jitter: 'none' } },
      });
      try {
        const lookup = defineTool({
          name: 'lookup',
          description: 'Look the order up',
          input: { type: 'object' },
          sideEffect: 'read_only',
          run: async (_input, context) => {
            appendFileSync(file, `${context.idempotencyKey}\n`);
            return { status: 'shipped' };
          },
        });
        const agent = defineAgent({
          name: 'retrying',
          // The second model call fails once (a provider's 503), then answers.
          model: stubBy((n) => {
            if (n === 0) return { toolCalls: [{ tool: 'lookup', input: {} }] };
            if (n === 1) throw new Error('503 from the provider');
            return { text: 'shipped' };
          }),
          instructions: 'Look it up.',
          tools: [lookup],
        });
        const transitions: string[] = [];
        const agents = createAgentRuntime({
          flows,
          agents: [agent],
          onTransition: (t) => transitions.push(`${t.type}:${t.turn}`),
        });
        const runId = `run-${name}`;
        const result = await agents.run(agent, 'where is o-1', { runId });
        expect(result).toMatchObject({ reason: 'goal_completed', output: 'shipped', turns: 2 });
        expect(callsIn(file)).toBe(1);
        expect(transitions.filter((t) => t === 'observed:1')).toHaveLength(1);
        const events = await store.read(runId);
        const failed = events.filter((e) => e.type === EventType.stepAttemptFailed);
        expect(failed.map((e) => (e.payload as { name?: string }).name)).toEqual(['decide:2']);
      } finally {
        await flows.shutdown();
        await store.close();
      }
    });
  },
);

describe('tool retry options', () => {
  const tool = (sideEffect: SideEffect, retry?: unknown) =>
    defineTool({
      name: 'refund',
      description: 'Refund the order',
      input: { type: 'object' },
      sideEffect,
      ...(retry === undefined ? {} : { retry: retry as never }),
      run: async () => null,
    });
  const codeOf = (fn: () => unknown): string | undefined => {
    try {
      fn();
    } catch (error) {
      return isLoomError(error) ? error.code : 'NOT_A_LOOM_ERROR';
    }
    return undefined;
  };

  it('retry on a tool that is not read_only or idempotent is refused: INVALID_ARGUMENT', () => {
    for (const sideEffect of ['local_mutation', 'remote_mutation', 'destructive'] as const) {
      expect(codeOf(() => tool(sideEffect, { attempts: 2 }))).toBe('INVALID_ARGUMENT');
      expect(codeOf(() => tool(sideEffect, false))).toBeUndefined();
    }
    expect(codeOf(() => tool('idempotent', { attempts: 2 }))).toBeUndefined();
  });

  it('a bad retry policy is refused at definition time: INVALID_ARGUMENT naming the option', () => {
    for (const bad of [{ attempts: 0 }, { attempts: 1.5 }, {}, 3, { attempts: 2, backoff: 5 }]) {
      expect(codeOf(() => tool('read_only', bad))).toBe('INVALID_ARGUMENT');
      expect(codeOf(() => agentWith(tool('read_only'), { toolRetry: bad as never }))).toBe(
        'INVALID_ARGUMENT',
      );
    }
    expect(
      codeOf(() =>
        agentWith(tool('read_only'), { toolRetry: { attempts: 2, backoff: { factor: 0 } } }),
      ),
    ).toBe('INVALID_ARGUMENT');
  });
});
