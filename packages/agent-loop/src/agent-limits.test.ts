// The wall-time budget (`limits.wallTimeMsMax`, `limit_time`) and approvals that re-ask when
// they expire (`onExpire: 're-ask'`), on the memory store and a ManualClock: every threshold is
// hit exactly, and one millisecond before it nothing ends.
import { EventType } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { StubModel } from '@loom/reasoning';
import { describe, expect, it } from 'vitest';
import {
  eventually,
  type Harness,
  harness,
  type JsonValue,
  scripted,
  shown,
} from './agent.test-support.js';
import { defineAgent, defineTool, type Policy } from './index.js';

// Not a multiple of the runtime's timer poll (1 s), so no threshold is met by a poll's chance.
const budgetMs = 1_234;

/** The instants the run's durable waits time out at, as their `signal.waiting` records say. */
async function waitDeadlines(flows: Harness['flows'], runId: string): Promise<(number | null)[]> {
  return (await flows.store.read(runId))
    .filter((event) => event.type === EventType.signalWaiting)
    .map((event) => (event.payload as { timeoutAtMs: number | null }).timeoutAtMs);
}

/** A read-only tool that holds each call until the test opens its gate. */
function gatedTool() {
  let reached!: () => void;
  let open!: () => void;
  const called = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const tool = defineTool({
    name: 'slow',
    description: 'Takes a while',
    input: { type: 'object' },
    sideEffect: 'read_only',
    run: async () => {
      reached();
      await gate;
      return 'done';
    },
  });
  return { tool, called, open };
}

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

describe('limit_time: the wall-time budget, measured from the recorded start', () => {
  it('is refused unless a whole number ≥ 1', () => {
    const model = scripted({ text: 'x' });
    for (const wallTimeMsMax of [0, -1, 1.5, Number.NaN]) {
      expect(() =>
        defineAgent({ name: 'a', model, instructions: '', tools: [], limits: { wallTimeMsMax } }),
      ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
  });

  it('at a turn boundary: a turn starting at threshold − 1 ms runs, one starting at the threshold ends the run', async () => {
    for (const [elapsedMs, reason, turns] of [
      [budgetMs - 1, 'goal_completed', 2],
      [budgetMs, 'limit_time', 1],
    ] as const) {
      const { tool, called, open } = gatedTool();
      const model = scripted({ toolCalls: [{ tool: 'slow', input: {} }] }, { text: 'finished' });
      const agent = defineAgent({
        name: 'a',
        model,
        instructions: '',
        tools: [tool],
        limits: { wallTimeMsMax: budgetMs },
      });
      const { agents, clock } = harness([agent]);
      const startMs = clock.now();
      const run = await agents.start(agent, 'go');
      await called;
      await clock.advance(elapsedMs);
      open();
      const result = await run.result();
      expect(result).toMatchObject({ reason, turns });
      expect(model.calls).toBe(turns);
      expect(clock.now() - startMs).toBe(elapsedMs);
      if (reason === 'limit_time') expect(result.error).toContain(`${budgetMs} ms`);
    }
  });

  it('while a model call runs: a call answering at threshold − 1 ms counts, a slower one is cut off at the threshold', async () => {
    for (const [latencyMs, reason] of [
      [budgetMs - 1, 'goal_completed'],
      [budgetMs * 5, 'limit_time'],
    ] as const) {
      const clock = new ManualClock();
      const model = new StubModel({ script: [{ text: 'answered' }], latencyMs, clock });
      const agent = defineAgent({
        name: 'a',
        model,
        instructions: '',
        tools: [],
        limits: { wallTimeMsMax: budgetMs },
      });
      const { agents } = harness([agent], clock);
      const startMs = clock.now();
      const run = await agents.start(agent, 'go');
      const result = await clock.runUntilSettled(run.result());
      expect(result.reason).toBe(reason);
      expect(clock.now() - startMs).toBe(reason === 'limit_time' ? budgetMs : latencyMs);
    }
  });

  it('while waiting for an approval: decided at threshold − 1 ms the call runs; undecided at the threshold the run ends', async () => {
    const { tool, sent } = mailer();
    const agentOf = (name: string) =>
      defineAgent({
        name,
        model: scripted(
          { toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] },
          {
            text: 'mailed',
          },
        ),
        instructions: '',
        tools: [tool],
        limits: { wallTimeMsMax: budgetMs },
      });

    const early = agentOf('early');
    const one = harness([early]);
    const startMs = one.clock.now();
    const run = await one.agents.start(early, 'go', { runId: 't1' });
    const [approval] = await pendingOf(one.agents, 't1');
    await one.clock.advance(budgetMs - 1);
    await one.flows.wakeDue();
    await one.agents.approve(approval?.id as string, { by: 'ops' });
    await one.flows.wakeDue();
    expect(await run.result()).toMatchObject({ reason: 'goal_completed', output: 'mailed' });
    expect(sent).toEqual([{ to: 'ana' }]);
    expect(one.clock.now() - startMs).toBe(budgetMs - 1);

    const late = agentOf('late');
    const two = harness([late]);
    const lateStartMs = two.clock.now();
    const waiting = await two.agents.start(late, 'go', { runId: 't2' });
    const [stale] = await pendingOf(two.agents, 't2');
    expect(await waitDeadlines(two.flows, 't2')).toEqual([lateStartMs + budgetMs]);
    expect(await two.clock.runUntilSettled(waiting.result())).toMatchObject({
      reason: 'limit_time',
      turns: 1,
    });
    expect(sent).toEqual([{ to: 'ana' }]);
    await expect(two.agents.approve(stale?.id as string, { by: 'ops' })).rejects.toMatchObject({
      code: 'APPROVAL_NOT_PENDING',
      fields: { status: 'expired' },
    });
  });

  it('an approval expiring after the budget ends the run with limit_time, one expiring first with approval_expired', async () => {
    for (const [expiresInMs, reason] of [
      [budgetMs + 1, 'limit_time'],
      [budgetMs - 1, 'approval_expired'],
    ] as const) {
      const { tool } = mailer();
      const agent = defineAgent({
        name: 'a',
        model: scripted({ toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] }),
        instructions: '',
        tools: [tool],
        limits: { wallTimeMsMax: budgetMs },
        policy: () => ({ kind: 'require_approval', reason: 'mail', expiresInMs }),
      });
      const { agents, clock, flows } = harness([agent]);
      const startMs = clock.now();
      const run = await agents.start(agent, 'go', { runId: 'e' });
      expect((await clock.runUntilSettled(run.result())).reason).toBe(reason);
      expect(await waitDeadlines(flows, 'e')).toEqual([startMs + Math.min(budgetMs, expiresInMs)]);
    }
  });

  it('while waiting for an answer to ask_human: the run ends at the threshold', async () => {
    const model = scripted({ toolCalls: [{ tool: 'ask_human', input: { question: 'Colour?' } }] });
    const agent = defineAgent({
      name: 'a',
      model,
      instructions: '',
      tools: [],
      askHuman: true,
      limits: { wallTimeMsMax: budgetMs },
    });
    const { agents, clock, flows } = harness([agent]);
    const startMs = clock.now();
    const run = await agents.start(agent, 'go', { runId: 'q' });
    await eventually(async () => {
      const [question] = await agents.questions('q');
      return question;
    }, 'a question');
    expect(await clock.runUntilSettled(run.result())).toMatchObject({ reason: 'limit_time' });
    expect(await waitDeadlines(flows, 'q')).toEqual([startMs + budgetMs]);
    expect((await agents.questions('q'))[0]?.status).toBe('pending');
  });

  it('an agent without the limit records no time; one with it records its start once, then one time per later turn', async () => {
    const counts: Record<string, number> = {};
    for (const wallTimeMsMax of [undefined, 60_000]) {
      const model = scripted(
        { toolCalls: [{ tool: 'lookup', input: {} }] },
        { toolCalls: [{ tool: 'lookup', input: { n: 2 } }] },
        { text: 'done' },
      );
      const lookup = defineTool({
        name: 'lookup',
        description: '',
        input: { type: 'object' },
        sideEffect: 'read_only',
        run: async () => 'ok',
      });
      const agent = defineAgent({
        name: 'a',
        model,
        instructions: '',
        tools: [lookup],
        ...(wallTimeMsMax === undefined ? {} : { limits: { wallTimeMsMax } }),
      });
      const { agents, flows } = harness([agent]);
      expect((await agents.run(agent, 'go', { runId: 'v' })).reason).toBe('goal_completed');
      counts[String(wallTimeMsMax)] = (await flows.store.read('v')).filter(
        (event) => event.type === 'value.recorded',
      ).length;
    }
    expect(counts).toEqual({ undefined: 0, '60000': 3 });
  });
});

describe("approvals that re-ask when they expire (onExpire: 're-ask')", () => {
  const expiresInMs = 60_000;
  const reasking =
    (asksMax?: number): Policy =>
    () => ({
      kind: 'require_approval',
      reason: 'mail',
      expiresInMs,
      onExpire: 're-ask',
      ...(asksMax === undefined ? {} : { asksMax }),
    });

  it('an expired ask is followed by a fresh one (new id, same request hash); the old id refuses; approving the new one runs the call once', async () => {
    const { tool, sent } = mailer();
    const model = scripted(
      { toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] },
      { text: 'mailed' },
    );
    const agent = defineAgent({
      name: 'a',
      model,
      instructions: '',
      tools: [tool],
      policy: reasking(),
    });
    const { agents, clock, flows } = harness([agent]);
    const run = await agents.start(agent, 'go', { runId: 'x1' });
    const [first] = await pendingOf(agents, 'x1');
    await clock.advance(expiresInMs - 1);
    await flows.wakeDue();
    expect((await agents.approvals('x1')).map((a) => a.status)).toEqual(['pending']);
    await clock.advance(1);
    await flows.wakeDue();
    const [second] = await pendingOf(agents, 'x1');
    expect(second?.id).not.toBe(first?.id);
    expect(second).toMatchObject({
      requestHash: first?.requestHash,
      ask: 2,
      previousId: first?.id,
      expiresAtMs: clock.now() + expiresInMs,
      request: first?.request as unknown as JsonValue,
    });
    expect((await agents.approvals('x1')).map((a) => a.status)).toEqual(['expired', 'pending']);
    await expect(
      agents.approve(first?.id as string, { by: 'ops', requestHash: first?.requestHash as string }),
    ).rejects.toMatchObject({ code: 'APPROVAL_NOT_PENDING', fields: { status: 'expired' } });
    await agents.approve(second?.id as string, {
      by: 'ops',
      requestHash: first?.requestHash as string,
    });
    await flows.wakeDue();
    expect(await run.result()).toMatchObject({ reason: 'goal_completed', output: 'mailed' });
    expect(sent).toEqual([{ to: 'ana' }]);
    expect(shown(model.requests[1])).toContain('sent');
  });

  it(`asks asksMax times in all (default 3), then ends with approval_expired`, async () => {
    for (const [asksMax, asks] of [
      [undefined, 3],
      [1, 1],
      [2, 2],
    ] as const) {
      const { tool, sent } = mailer();
      const agent = defineAgent({
        name: 'a',
        model: scripted({ toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] }),
        instructions: '',
        tools: [tool],
        policy: reasking(asksMax),
      });
      const { agents, clock } = harness([agent]);
      const run = await agents.start(agent, 'go', { runId: 'x2' });
      await pendingOf(agents, 'x2');
      expect(await clock.runUntilSettled(run.result())).toMatchObject({
        reason: 'approval_expired',
      });
      const approvals = await agents.approvals('x2');
      expect(approvals.map((a) => a.status)).toEqual(Array(asks).fill('expired'));
      expect(new Set(approvals.map((a) => a.requestHash)).size).toBe(1);
      expect(approvals.map((a) => a.ask)).toEqual([undefined, 2, 3].slice(0, asks));
      for (const [n, approval] of approvals.entries()) {
        expect(approval.expiresAtMs).toBe(approval.requestedAtMs + expiresInMs);
        const before = approvals[n - 1];
        if (before !== undefined) {
          expect(approval.previousId).toBe(before.id);
          expect(approval.requestedAtMs).toBeGreaterThanOrEqual(before.expiresAtMs as number);
        }
      }
      expect(sent).toEqual([]);
    }
  });

  it("onExpire: 'end' (the default) ends at the first expiry", async () => {
    const { tool } = mailer();
    const agent = defineAgent({
      name: 'a',
      model: scripted({ toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] }),
      instructions: '',
      tools: [tool],
      policy: () => ({ kind: 'require_approval', reason: 'mail', expiresInMs, onExpire: 'end' }),
    });
    const { agents, clock } = harness([agent]);
    const run = await agents.start(agent, 'go', { runId: 'x3' });
    await pendingOf(agents, 'x3');
    expect((await clock.runUntilSettled(run.result())).reason).toBe('approval_expired');
    expect(await agents.approvals('x3')).toHaveLength(1);
  });

  it('a policy answering a bad onExpire or asksMax aborts the run (typed), runs nothing', async () => {
    for (const bad of [{ onExpire: 'later' }, { onExpire: 're-ask', asksMax: 0 }]) {
      const { tool, sent } = mailer();
      const agent = defineAgent({
        name: 'a',
        model: scripted({ toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] }),
        instructions: '',
        tools: [tool],
        policy: () => ({ kind: 'require_approval', reason: 'mail', ...bad }) as never,
      });
      const { agents } = harness([agent]);
      const result = await agents.run(agent, 'go');
      expect(result).toMatchObject({ reason: 'policy_aborted' });
      expect(result.error).toMatch(/onExpire|asksMax/);
      expect(sent).toEqual([]);
    }
  });
});
