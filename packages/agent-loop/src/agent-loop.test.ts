import { type ModelResponse, StubModel } from '@loom/reasoning';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  eventually,
  harness,
  type JsonValue,
  scripted,
  shown,
  stubBy,
} from './agent.test-support.js';
import { defineAgent, defineTool, type Policy, type RunView, type Tool } from './index.js';

function counter(sideEffect: Tool['sideEffect'] = 'read_only', fail = false) {
  const calls: unknown[] = [];
  const tool = defineTool({
    name: 'lookup',
    description: 'Look an order up',
    input: z.object({ id: z.string() }),
    sideEffect,
    run: async (input) => {
      calls.push(input);
      if (fail) throw new Error('order service down');
      return { id: (input as { id: string }).id, status: 'shipped' };
    },
  });
  return { tool, calls };
}

describe('defineTool', () => {
  it('shows the model the JSON Schema of a zod input', () => {
    const { tool } = counter();
    expect(tool.inputSchema).toMatchObject({
      type: 'object',
      properties: { id: { type: 'string' } },
      required: ['id'],
    });
  });

  it('validates against a plain JSON Schema', async () => {
    const tool = defineTool({
      name: 'mail',
      description: 'Send a mail',
      input: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
      sideEffect: 'remote_mutation',
      run: async () => null,
    });
    expect(await tool.checkInput({ to: 'a@b' })).toBeUndefined();
    expect(await tool.checkInput({ to: 5 })).toMatch(/to/);
  });

  it('refuses an unknown side-effect class and a bad name', () => {
    expect(() =>
      defineTool({
        name: 'x',
        description: '',
        input: {},
        sideEffect: 'risky' as never,
        run: async () => null,
      }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() =>
      defineTool({
        name: 'a b',
        description: '',
        input: {},
        sideEffect: 'read_only',
        run: async () => null,
      }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('the turn loop', () => {
  it('calls a tool, feeds the result back, and completes with the final text', async () => {
    const { tool, calls } = counter();
    const model = scripted(
      { toolCalls: [{ tool: 'lookup', input: { id: 'A-1' } }] },
      { text: 'Order A-1 has shipped.' },
    );
    const agent = defineAgent({ name: 'support', model, instructions: 'Help.', tools: [tool] });
    const { agents } = harness([agent]);
    const result = await agents.run(agent, 'Where is order A-1?');
    expect(result).toMatchObject({
      reason: 'goal_completed',
      output: 'Order A-1 has shipped.',
      turns: 2,
    });
    expect(calls).toEqual([{ id: 'A-1' }]);
    expect(shown(model.requests[1])).toContain('shipped');
    expect(model.requests[0]?.tools?.map((t) => t.name)).toEqual(['lookup', 'fail_goal']);
  });

  it('feeds arguments that fail the schema back as an invalid decision, before the policy', async () => {
    const { tool, calls } = counter();
    const seen: string[] = [];
    const policy: Policy = (request) => {
      seen.push(request.tool);
      return { kind: 'allow' };
    };
    const model = scripted({ toolCalls: [{ tool: 'lookup', input: { id: 7 } }] }, { text: 'done' });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [tool], policy });
    const { agents } = harness([agent]);
    expect((await agents.run(agent, 'go')).reason).toBe('goal_completed');
    expect(calls).toEqual([]);
    expect(seen).toEqual([]);
    expect(shown(model.requests[1])).toMatch(
      /Invalid decision: the arguments of 'lookup' do not fit/,
    );
  });

  it('feeds a call whose arguments are not JSON back as an invalid decision', async () => {
    const { tool, calls } = counter();
    const model = scripted(
      { toolCalls: [{ tool: 'lookup', rawInput: '{"id":' }] },
      { text: 'done' },
    );
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [tool] });
    const { agents } = harness([agent]);
    expect((await agents.run(agent, 'go')).turns).toBe(2);
    expect(calls).toEqual([]);
    expect(shown(model.requests[1])).toContain('Invalid decision');
  });

  it('runs the calls of one answer concurrently', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const waiter = defineTool({
      name: 'wait_for_other',
      description: '',
      input: { type: 'object' },
      sideEffect: 'read_only',
      run: async () => {
        await released; // never resolves if the calls run one after the other
        return 'waited';
      },
    });
    const other = defineTool({
      name: 'release',
      description: '',
      input: { type: 'object' },
      sideEffect: 'read_only',
      run: async () => {
        release();
        return 'released';
      },
    });
    const model = scripted(
      {
        toolCalls: [
          { tool: 'wait_for_other', input: {} },
          { tool: 'release', input: {} },
        ],
      },
      { text: 'both' },
    );
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [waiter, other] });
    const { agents } = harness([agent]);
    expect((await agents.run(agent, 'go')).reason).toBe('goal_completed');
    expect(shown(model.requests[1])).toContain('waited');
  });

  it("a tool's context names its run, turn, call and key; signal is an own accessor a spread carries", async () => {
    const seen: Array<Record<string, unknown>> = [];
    const probe = defineTool({
      name: 'probe',
      description: '',
      input: { type: 'object' },
      sideEffect: 'read_only',
      run: async (_input, context) => {
        seen.push({
          runId: context.runId,
          turn: context.turn,
          callId: context.callId,
          idempotencyKey: context.idempotencyKey,
          // One class, not a literal with a getter (a hash table per call); signal an own
          // enumerable accessor, so a spread of the context carries it.
          accessor: Object.getOwnPropertyDescriptor(context, 'signal')?.enumerable === true,
          spread: { ...context }.signal === context.signal,
          aborted: context.signal.aborted,
        });
        return 'seen';
      },
    });
    const model = scripted({ toolCalls: [{ tool: 'probe', input: {} }] }, { text: 'done' });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [probe] });
    const { agents } = harness([agent]);
    const run = await agents.start(agent, 'go', { runId: 'probe-run' });
    expect((await run.result()).reason).toBe('goal_completed');
    expect(seen).toEqual([
      {
        runId: 'probe-run',
        turn: 1,
        callId: expect.any(String),
        idempotencyKey: 'probe-run/1.0',
        accessor: true,
        spread: true,
        aborted: false,
      },
    ]);
  });

  it('a tool past its timeoutMs is a tool_error observation, and the run goes on', async () => {
    const hang = defineTool({
      name: 'hang',
      description: '',
      input: { type: 'object' },
      sideEffect: 'read_only',
      timeoutMs: 5_000,
      run: (_input, context) =>
        new Promise<JsonValue>((_resolve, reject) => {
          context.signal.addEventListener('abort', () => reject(new Error('aborted')));
        }),
    });
    const model = scripted(
      { toolCalls: [{ tool: 'hang', input: {} }] },
      { text: 'gave up waiting' },
    );
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [hang] });
    const { agents, clock } = harness([agent]);
    const run = await agents.start(agent, 'go');
    expect(await clock.runUntilSettled(run.result())).toMatchObject({
      reason: 'goal_completed',
      turns: 2,
    });
    expect(shown(model.requests[1])).toContain('TIMEOUT');
  });

  it('ends with goal_failed when the model calls fail_goal', async () => {
    const model = scripted({
      toolCalls: [{ tool: 'fail_goal', input: { reason: 'no such order' } }],
    });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [] });
    const { agents } = harness([agent]);
    expect(await agents.run(agent, 'go')).toMatchObject({
      reason: 'goal_failed',
      error: 'no such order',
      turns: 1,
    });
  });

  it('ends with context_exceeded when the required prompt no longer fits budgetTokens', async () => {
    const { tool } = counter();
    const model = scripted(
      { toolCalls: [{ tool: 'lookup', input: { id: 'A'.repeat(2_000) } }] },
      { text: 'done' },
    );
    const agent = defineAgent({
      name: 'a',
      model,
      instructions: 'Help.',
      tools: [tool],
      budgetTokens: 200,
    });
    const { agents } = harness([agent]);
    expect(await agents.run(agent, 'go')).toMatchObject({ reason: 'context_exceeded', turns: 1 });
  });

  it('ends with model_failed when the model call fails', async () => {
    const model = scripted({ fail: { code: 'MODEL_BAD_REQUEST' } });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [] });
    const { agents } = harness([agent]);
    expect(await agents.run(agent, 'go')).toMatchObject({ reason: 'model_failed', turns: 0 });
  });
});

describe('limits, each hit exactly at its threshold', () => {
  it('limit_steps: stepsMax turns are decided, not one more', async () => {
    const { tool } = counter();
    const model = stubBy((n) => ({ toolCalls: [{ tool: 'lookup', input: { id: `A-${n}` } }] }));
    const agent = defineAgent({
      name: 'a',
      model,
      instructions: '',
      tools: [tool],
      limits: { stepsMax: 3 },
    });
    const { agents } = harness([agent]);
    expect(await agents.run(agent, 'go')).toMatchObject({ reason: 'limit_steps', turns: 3 });
    expect(model.calls).toBe(3);
  });

  it('a run that completes on its stepsMax-th turn completes', async () => {
    const { tool } = counter();
    const model = stubBy((n) =>
      n < 2 ? { toolCalls: [{ tool: 'lookup', input: { id: `A-${n}` } }] } : { text: 'done' },
    );
    const agent = defineAgent({
      name: 'a',
      model,
      instructions: '',
      tools: [tool],
      limits: { stepsMax: 3 },
    });
    const { agents } = harness([agent]);
    expect(await agents.run(agent, 'go')).toMatchObject({ reason: 'goal_completed', turns: 3 });
  });

  it('limit_tool_failures: the third failure in a row ends the run', async () => {
    const { tool, calls } = counter('read_only', true);
    const model = stubBy((n) => ({ toolCalls: [{ tool: 'lookup', input: { id: `A-${n}` } }] }));
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [tool] });
    const { agents } = harness([agent]);
    expect(await agents.run(agent, 'go')).toMatchObject({
      reason: 'limit_tool_failures',
      turns: 3,
    });
    expect(calls).toHaveLength(3);
    expect(shown(model.requests[1])).toContain('order service down');
  });

  it('a success resets the failures in a row', async () => {
    let n = 0;
    const flaky = defineTool({
      name: 'lookup',
      description: '',
      input: { type: 'object' },
      sideEffect: 'read_only',
      run: async () => {
        n += 1;
        if (n === 3) return 'ok'; // fail, fail, ok, fail, fail, then done
        throw new Error('down');
      },
    });
    const model = stubBy((i) =>
      i < 5 ? { toolCalls: [{ tool: 'lookup', input: { i } }] } : { text: 'done' },
    );
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [flaky] });
    const { agents } = harness([agent]);
    expect(await agents.run(agent, 'go')).toMatchObject({ reason: 'goal_completed', turns: 6 });
  });

  it('loop_detected: the same call asked for the third time in a row is not run', async () => {
    const { tool, calls } = counter();
    const model = scripted({ toolCalls: [{ tool: 'lookup', input: { id: 'A-1' } }] });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [tool] });
    const { agents } = harness([agent]);
    expect(await agents.run(agent, 'go')).toMatchObject({ reason: 'loop_detected', turns: 3 });
    expect(calls).toHaveLength(2);
  });

  it('the same call twice, then another, then the first again is no loop', async () => {
    const { tool, calls } = counter();
    const ids = ['A', 'A', 'B', 'A', 'A'];
    const model = stubBy((n) =>
      n < ids.length
        ? { toolCalls: [{ tool: 'lookup', input: { id: ids[n] as string } }] }
        : { text: 'done' },
    );
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [tool] });
    const { agents } = harness([agent]);
    expect((await agents.run(agent, 'go')).reason).toBe('goal_completed');
    expect(calls).toHaveLength(5);
  });
});

describe('budgets, each hit exactly at its threshold', () => {
  const prices = { 'stub-model': { inputUsdPerMTok: 1_000, outputUsdPerMTok: 2_000 } };
  const script = (n: number) => ({ toolCalls: [{ tool: 'lookup', input: { id: `A-${n}` } }] });

  /** Tokens and cost after each of the first three model calls of an unlimited run. */
  async function spentPerTurn(): Promise<{ tokens: number; costUsd: number }[]> {
    const { tool } = counter();
    const model = new StubModel({ script: (_r, n) => script(n), prices });
    const agent = defineAgent({
      name: 'a',
      model,
      instructions: '',
      tools: [tool],
      limits: { stepsMax: 3 },
    });
    const { agents, flows } = harness([agent]);
    await agents.run(agent, 'go', { runId: 'measure' });
    const out: { tokens: number; costUsd: number }[] = [];
    let tokens = 0;
    let costUsd = 0;
    for (const event of await flows.store.read('measure')) {
      const payload = event.payload as { name?: string; result?: ModelResponse };
      if (event.type !== 'step.completed' || !payload.name?.startsWith('decide:')) continue;
      const usage = payload.result?.usage;
      tokens += (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0);
      costUsd += payload.result?.costUsd ?? 0;
      out.push({ tokens, costUsd });
    }
    return out;
  }

  it('limit_tokens: the call that reaches tokensMax is the last', async () => {
    const spent = await spentPerTurn();
    const atTurn2 = spent[1]?.tokens as number;
    for (const [tokensMax, turns, reason] of [
      [atTurn2, 2, 'limit_tokens'],
      [atTurn2 + 1, 3, 'limit_tokens'],
    ] as const) {
      const { tool } = counter();
      const model = new StubModel({ script: (_r, n) => script(n), prices });
      const agent = defineAgent({
        name: 'a',
        model,
        instructions: '',
        tools: [tool],
        limits: { tokensMax },
      });
      const { agents } = harness([agent]);
      expect(await agents.run(agent, 'go')).toMatchObject({ reason, turns });
    }
  });

  it('limit_cost: the call that reaches costUsdMax is the last', async () => {
    const spent = await spentPerTurn();
    const atTurn2 = spent[1]?.costUsd as number;
    expect(atTurn2).toBeGreaterThan(0);
    for (const [costUsdMax, turns] of [
      [atTurn2, 2],
      [atTurn2 * 1.0001, 3],
    ] as const) {
      const { tool } = counter();
      const model = new StubModel({ script: (_r, n) => script(n), prices });
      const agent = defineAgent({
        name: 'a',
        model,
        instructions: '',
        tools: [tool],
        limits: { costUsdMax },
      });
      const { agents } = harness([agent]);
      expect(await agents.run(agent, 'go')).toMatchObject({ reason: 'limit_cost', turns });
    }
  });

  it('an answer that completes the goal completes it, even past the budget', async () => {
    const model = scripted({ text: 'done at once' });
    const agent = defineAgent({
      name: 'a',
      model,
      instructions: '',
      tools: [],
      limits: { tokensMax: 1 },
    });
    const { agents } = harness([agent]);
    expect(await agents.run(agent, 'go')).toMatchObject({ reason: 'goal_completed', turns: 1 });
  });
});

describe('policy', () => {
  it('the default policy denies destructive tools, and the model sees the denial', async () => {
    const { tool, calls } = counter('destructive');
    const model = scripted({ toolCalls: [{ tool: 'lookup', input: { id: 'A' } }] }, { text: 'ok' });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [tool] });
    const { agents } = harness([agent]);
    expect((await agents.run(agent, 'go')).reason).toBe('goal_completed');
    expect(calls).toEqual([]);
    expect(shown(model.requests[1])).toContain("Denied: 'lookup' is destructive");
  });

  it('abort ends the run with policy_aborted and runs nothing', async () => {
    const { tool, calls } = counter();
    const model = scripted({ toolCalls: [{ tool: 'lookup', input: { id: 'A' } }] });
    const agent = defineAgent({
      name: 'a',
      model,
      instructions: '',
      tools: [tool],
      policy: () => ({ kind: 'abort', reason: 'budget spent' }),
    });
    const { agents } = harness([agent]);
    expect(await agents.run(agent, 'go')).toMatchObject({
      reason: 'policy_aborted',
      error: 'budget spent',
    });
    expect(calls).toEqual([]);
  });

  it('a policy gets a frozen view: changing it fails and reaches no later turn', async () => {
    const { tool } = counter();
    const views: RunView[] = [];
    const errors: string[] = [];
    const policy: Policy = (_request, view) => {
      views.push(view);
      try {
        (view.turns as unknown as unknown[]).push('junk');
      } catch (error) {
        errors.push((error as Error).name);
      }
      const first = view.turns[0];
      if (first !== undefined) {
        try {
          (first.observations as unknown as unknown[]).length = 0;
        } catch (error) {
          errors.push((error as Error).name);
        }
      }
      return { kind: 'allow' };
    };
    const model = scripted(
      { toolCalls: [{ tool: 'lookup', input: { id: 'A' } }] },
      { toolCalls: [{ tool: 'lookup', input: { id: 'B' } }] },
      { text: 'done' },
    );
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [tool], policy });
    const { agents } = harness([agent]);
    expect((await agents.run(agent, 'go')).reason).toBe('goal_completed');
    expect(errors).toEqual(['TypeError', 'TypeError', 'TypeError']);
    expect(views[1]?.turns).toHaveLength(1);
    expect(views[1]?.turns[0]?.observations).toHaveLength(1);
    expect(shown(model.requests[2])).toContain('"id":"A"');
  });
});

describe('approvals', () => {
  function mailer() {
    const sent: unknown[] = [];
    const tool = defineTool({
      name: 'send_mail',
      description: 'Send a mail',
      input: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
      sideEffect: 'remote_mutation',
      run: async (input) => {
        sent.push(input);
        return 'sent';
      },
    });
    return { tool, sent };
  }

  async function pendingOf(agents: ReturnType<typeof harness>['agents'], runId: string, count = 1) {
    return eventually(async () => {
      const pending = (await agents.approvals(runId)).filter((a) => a.status === 'pending');
      return pending.length >= count ? pending : undefined;
    }, `${count} pending approvals`);
  }

  it('waits for approval, records who approved, then runs the call once', async () => {
    const { tool, sent } = mailer();
    const model = scripted(
      { toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] },
      { text: 'mailed' },
    );
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [tool] });
    const { agents, flows } = harness([agent]);
    const run = await agents.start(agent, 'mail ana', { runId: 'r1' });
    const [approval] = await pendingOf(agents, 'r1');
    expect(approval).toMatchObject({
      kind: 'tool_call',
      request: { tool: 'send_mail', input: { to: 'ana' } },
    });
    expect(sent).toEqual([]);
    await agents.approve(approval?.id as string, {
      by: 'ops',
      note: 'fine',
      requestHash: approval?.requestHash as string,
    });
    await flows.wakeDue();
    expect(await run.result()).toMatchObject({ reason: 'goal_completed', output: 'mailed' });
    expect(sent).toEqual([{ to: 'ana' }]);
    const [decided] = await agents.approvals('r1');
    expect(decided).toMatchObject({ status: 'approved', decision: { by: 'ops', note: 'fine' } });
    await expect(agents.approve(approval?.id as string, { by: 'ops' })).rejects.toMatchObject({
      code: 'APPROVAL_NOT_PENDING',
    });
  });

  it('refuses an approval of a request other than the pending one', async () => {
    const { tool } = mailer();
    const model = scripted(
      { toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] },
      { text: 'x' },
    );
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [tool] });
    const { agents } = harness([agent]);
    await agents.start(agent, 'go', { runId: 'r2' });
    const [approval] = await pendingOf(agents, 'r2');
    await expect(
      agents.approve(approval?.id as string, { by: 'ops', requestHash: 'f'.repeat(64) }),
    ).rejects.toMatchObject({ code: 'APPROVAL_REQUEST_CHANGED' });
    expect((await agents.approvals('r2'))[0]?.status).toBe('pending');
  });

  it('a rejection is a denial the model sees; with endRun it ends the run', async () => {
    const { tool, sent } = mailer();
    const model = scripted(
      { toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] },
      { text: 'ok' },
    );
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [tool] });
    const { agents, flows } = harness([agent]);
    const first = await agents.start(agent, 'go', { runId: 'r3' });
    const [a3] = await pendingOf(agents, 'r3');
    await agents.reject(a3?.id as string, { by: 'ops', note: 'not today' });
    await flows.wakeDue();
    expect((await first.result()).reason).toBe('goal_completed');
    expect(shown(model.requests[1])).toContain('rejected by ops: not today');

    const again = scripted({ toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] });
    const ending = defineAgent({ name: 'b', model: again, instructions: '', tools: [tool] });
    const other = harness([ending]);
    const second = await other.agents.start(ending, 'go', { runId: 'r4' });
    const [a4] = await pendingOf(other.agents, 'r4');
    await other.agents.reject(a4?.id as string, { by: 'ops', endRun: true });
    await other.flows.wakeDue();
    expect((await second.result()).reason).toBe('approval_rejected');
    expect(sent).toEqual([]);
  });

  it('approvals of parallel calls resume the run whichever order they are decided in', async () => {
    const { tool, sent } = mailer();
    const model = scripted(
      {
        toolCalls: [
          { tool: 'send_mail', input: { to: 'ana' } },
          { tool: 'send_mail', input: { to: 'bo' } },
        ],
      },
      { text: 'both' },
    );
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [tool] });
    const { agents, flows } = harness([agent]);
    const run = await agents.start(agent, 'go', { runId: 'r5' });
    const pending = await pendingOf(agents, 'r5', 2);
    await agents.approve(pending[1]?.id as string, { by: 'ops' });
    await flows.wakeDue();
    await agents.approve(pending[0]?.id as string, { by: 'ops' });
    await flows.wakeDue();
    expect((await run.result()).reason).toBe('goal_completed');
    expect(sent).toEqual([{ to: 'ana' }, { to: 'bo' }]);
  });

  it('an approval past its expiry ends the run with approval_expired', async () => {
    const { tool, sent } = mailer();
    const model = scripted({ toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] });
    const agent = defineAgent({
      name: 'a',
      model,
      instructions: '',
      tools: [tool],
      policy: () => ({ kind: 'require_approval', reason: 'mail', expiresInMs: 60_000 }),
    });
    const { agents, clock } = harness([agent]);
    const run = await agents.start(agent, 'go', { runId: 'r6' });
    await pendingOf(agents, 'r6');
    expect(await clock.runUntilSettled(run.result())).toMatchObject({ reason: 'approval_expired' });
    expect((await agents.approvals('r6'))[0]?.status).toBe('expired');
    expect(sent).toEqual([]);
  });

  it('refuses unknown approvals and runs, resolutions on a tool_call, and unregistered agents', async () => {
    const { tool } = mailer();
    const model = scripted({ toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [tool] });
    const stranger = defineAgent({ name: 'b', model, instructions: '', tools: [] });
    const { agents } = harness([agent]);
    await agents.start(agent, 'go', { runId: 'r8' });
    const [approval] = await pendingOf(agents, 'r8');
    await expect(
      agents.approve(approval?.id as string, { by: 'ops', resolution: { kind: 'rerun' } }),
    ).rejects.toMatchObject({ code: 'INVALID_RESOLUTION' });
    await expect(agents.approve('r8~9.9', { by: 'ops' })).rejects.toMatchObject({
      code: 'APPROVAL_NOT_FOUND',
    });
    await expect(agents.approve(approval?.id as string, { by: '' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(agents.approvals('nobody')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
    await expect(agents.start(stranger, 'go')).rejects.toMatchObject({
      code: 'AGENT_NOT_REGISTERED',
    });
    expect((await agents.approvals('r8'))[0]?.status).toBe('pending');
  });

  it('ask_human: the run waits for a person and the model gets the answer', async () => {
    const model = stubBy((_n, request) =>
      shown(request).includes('blue')
        ? { text: 'The customer wants blue.' }
        : { toolCalls: [{ tool: 'ask_human', input: { question: 'Which colour?' } }] },
    );
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [], askHuman: true });
    const { agents, flows } = harness([agent]);
    const run = await agents.start(agent, 'go', { runId: 'q1' });
    const [question] = await eventually(async () => {
      const pending = (await agents.questions('q1')).filter((q) => q.status === 'pending');
      return pending.length > 0 ? pending : undefined;
    }, 'a pending question');
    expect(question).toMatchObject({ question: 'Which colour?', turn: 1 });
    await agents.answer(question?.id as string, { by: 'ana', text: 'blue' });
    await expect(
      agents.answer(question?.id as string, { by: 'bo', text: 'red' }),
    ).rejects.toMatchObject({
      code: 'QUESTION_NOT_PENDING',
    });
    await flows.wakeDue();
    expect(await run.result()).toMatchObject({
      reason: 'goal_completed',
      output: 'The customer wants blue.',
    });
    expect((await agents.questions('q1'))[0]).toMatchObject({
      status: 'answered',
      answer: { by: 'ana', text: 'blue' },
    });
    expect(model.requests[0]?.tools?.map((t) => t.name)).toContain('ask_human');
  });

  it('cancel ends a waiting run with operator_cancelled', async () => {
    const { tool } = mailer();
    const model = scripted({ toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] });
    const agent = defineAgent({ name: 'a', model, instructions: '', tools: [tool] });
    const { agents } = harness([agent]);
    const run = await agents.start(agent, 'go', { runId: 'r7' });
    await pendingOf(agents, 'r7');
    expect(await agents.cancel('r7', { by: 'ops' })).toBe(true);
    expect(await run.result()).toMatchObject({ reason: 'operator_cancelled' });
  });
});
