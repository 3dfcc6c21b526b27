// `loom fork <id> --at <sequence>` (the CLI in process), on a SQLite file and Postgres: the fork
// is a new run whose log is the original's up to the cut; a runtime running the flow picks it up
// (its recovery round) and runs the steps after the cut again, once; the original is untouched.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AgentRuntime, createAgentRuntime, defineAgent, defineTool } from '@loom/agent-loop';
import type { StoredEvent } from '@loom/event-runtime';
import { StubModel } from '@loom/reasoning';
import { createRuntime, defineFlow, type Runtime } from '@loom/workflow-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openOperator, runCli } from '../src/index.js';
import { dbTargets } from './db-targets.js';
import { eventually, loomInProcess } from './fixture.js';

const { dir, targets, cleanup } = dbTargets('view-fork');
afterAll(cleanup);

describe.each(targets)('loom fork on $name', (target) => {
  const env = { LOOM_DB: target.db };
  const sideChannel = join(dir, `${target.name}.steps`);
  const ran = () =>
    existsSync(sideChannel) ? readFileSync(sideChannel, 'utf8').trim().split('\n') : [];
  const pipeline = defineFlow({ name: 'pipeline' }, async (ctx, input: { n: number }) => {
    let value = input.n;
    for (const name of ['a', 'b', 'c']) {
      value = await ctx.step(name, () => {
        appendFileSync(sideChannel, `${ctx.executionId} ${name}\n`);
        return value + 1;
      });
    }
    return value;
  });

  it('forks after step a: the fork runs b and c again, once, and ends like the original', async () => {
    const first = createRuntime({ backend: await target.open(), flows: [pipeline] });
    try {
      expect(await (await first.start(pipeline, { n: 1 }, { executionId: 'p-1' })).result()).toBe(
        4,
      );
    } finally {
      await first.shutdown();
    }
    const original = JSON.parse(
      (await loomInProcess(['events', 'p-1', '--json'], env)).stdout,
    ) as StoredEvent[];
    const cut = original.find(
      (e) => e.type === 'step.completed' && (e.payload as { name: string }).name === 'a',
    ) as StoredEvent;

    const forked = await loomInProcess(
      ['fork', 'p-1', '--at', String(cut.sequence), '--by', 'ana', '--json'],
      env,
    );
    expect(forked.stderr).toBe('');
    expect(forked.code).toBe(0);
    const forkId = `fork-${cut.sequence}-of-p-1`;
    expect(JSON.parse(forked.stdout)).toEqual({
      executionId: forkId,
      forkedFrom: 'p-1',
      atSequence: cut.sequence,
    });
    const copied = JSON.parse(
      (await loomInProcess(['events', forkId, '--json'], env)).stdout,
    ) as StoredEvent[];
    expect(copied).toHaveLength(cut.sequence + 1);
    expect(copied[0]?.payload).toMatchObject({
      flow: 'pipeline',
      input: { n: 1 },
      forkedFrom: { executionId: 'p-1', sequence: cut.sequence, by: 'ana' },
    });
    expect(copied.slice(1).map((e) => [e.type, e.payload])).toEqual(
      original.slice(1, cut.sequence + 1).map((e) => [e.type, e.payload]),
    );

    // A runtime running the flow: its boot recovery round finds the fork and drives it.
    const second = createRuntime({ backend: await target.open(), flows: [pipeline] });
    try {
      expect(await second.attach<number>(forkId).result()).toBe(4);
    } finally {
      await second.shutdown();
    }
    expect(ran().filter((line) => line.startsWith(forkId))).toEqual([`${forkId} b`, `${forkId} c`]);
    expect(ran().filter((line) => line.startsWith('p-1 '))).toEqual(['p-1 a', 'p-1 b', 'p-1 c']);
    const after = JSON.parse((await loomInProcess(['events', 'p-1', '--json'], env)).stdout);
    expect(after).toEqual(original);
    expect((await loomInProcess(['verify', forkId], env)).code).toBe(0);
  });

  it('refuses a cut at the ending, an unknown run and an id that exists', async () => {
    const events = JSON.parse(
      (await loomInProcess(['events', 'p-1', '--json'], env)).stdout,
    ) as StoredEvent[];
    const ending = await loomInProcess(['fork', 'p-1', '--at', String(events.length - 1)], env);
    expect(ending.code).toBe(2);
    expect(ending.stderr).toContain(`a sequence before its ending: 0 to ${events.length - 2}`);
    const unknown = await loomInProcess(['fork', 'nope', '--at', '1'], env);
    expect(unknown.code).toBe(3);
    const again = await loomInProcess(['fork', 'p-1', '--at', '1', '--id', 'p-1'], env);
    expect(again.code).toBe(4);
    expect(again.stderr).toContain('EXECUTION_ALREADY_STARTED');
  });
});

// Forks of an agent run: its approvals, and an approved call the fork would run again.
describe.each(targets)('loom fork of an agent run on $name', (target) => {
  const env = { LOOM_DB: target.db };
  const sideChannel = join(dir, `${target.name}.mails`);
  const mails = () =>
    existsSync(sideChannel) ? readFileSync(sideChannel, 'utf8').trim().split('\n') : [];
  const send = defineTool({
    name: 'send_mail',
    description: 'Send a mail',
    input: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
    sideEffect: 'remote_mutation',
    run: async (_input, context) => {
      appendFileSync(sideChannel, `${context.idempotencyKey}\n`);
      return 'sent';
    },
  });
  // The default policy asks for approval of a remote_mutation.
  const agent = defineAgent({
    name: 'fork-mailer',
    model: new StubModel({
      script: (request) =>
        request.messages.some((message) => message.role === 'tool')
          ? { text: 'mailed' }
          : { toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] },
    }),
    instructions: 'Mail ana once.',
    tools: [send],
  });
  const runId = `mail-${target.name}`;
  let log: StoredEvent[] = [];
  const seqOf = (type: string, name: string) =>
    (
      log.find(
        (e) => e.type === type && (e.payload as { name?: string }).name === name,
      ) as StoredEvent
    ).sequence;

  const driving = async <T>(work: (agents: AgentRuntime, flows: Runtime) => Promise<T>) => {
    const flows = createRuntime({ backend: await target.open(), timerPollMs: 0 });
    const agents = createAgentRuntime({ flows, agents: [agent] });
    try {
      return await work(agents, flows);
    } finally {
      await flows.shutdown();
    }
  };

  beforeAll(async () => {
    await driving(async (agents, flows) => {
      const run = await agents.start(agent, 'go', { runId });
      const approval = await eventually(
        async () => (await agents.approvals(runId)).find((a) => a.status === 'pending'),
        'the pending approval',
      );
      await agents.approve(approval.id, { by: 'ana' });
      await flows.wakeDue();
      expect(await run.result()).toMatchObject({ reason: 'goal_completed' });
    });
    expect(mails()).toEqual([`${runId}/1.0`]);
    log = JSON.parse(
      (await loomInProcess(['events', runId, '--json'], env)).stdout,
    ) as StoredEvent[];
  });

  it("a fork's approvals list as its log decided them", async () => {
    const afterCall = seqOf('step.completed', 'tool:1.0');
    const beforeDecision = seqOf('signal.waiting', 'approval:1.0');
    for (const at of [afterCall, beforeDecision]) {
      expect(
        (await loomInProcess(['fork', runId, '--at', String(at), '--by', 'ana'], env)).code,
      ).toBe(0);
    }
    await driving(async (agents, flows) => {
      const decided = await agents.approvals(`fork-${afterCall}-of-${runId}`);
      expect(decided.map((a) => [a.id, a.status, a.decision?.by])).toEqual([
        [`fork-${afterCall}-of-${runId}~1.0`, 'approved', 'ana'],
      ]);
      const undecidedId = `fork-${beforeDecision}-of-${runId}`;
      const undecided = await agents.approvals(undecidedId);
      expect(undecided.map((a) => [a.id, a.status])).toEqual([[`${undecidedId}~1.0`, 'pending']]);
      // Decided in the fork, by the fork's id: the fork runs the call once, under its own key.
      await agents.approve(`${undecidedId}~1.0`, { by: 'bo' });
      await flows.recover();
      await flows.wakeDue();
      expect(await agents.attach(undecidedId).result()).toMatchObject({
        reason: 'goal_completed',
      });
      expect((await agents.approvals(runId))[0]?.decision?.by).toBe('ana');
    });
    expect(mails().filter((line) => line.startsWith('fork-'))).toEqual([
      `fork-${beforeDecision}-of-${runId}/1.0`,
    ]);
  });

  it('a fork cut between an approval and its call says it would re-run the call, and forks only when told to', async () => {
    const between = seqOf('signal.received', 'approval:1.0');
    const forkId = `fork-${between}-of-${runId}`;
    const call = {
      approvalId: `${runId}~1.0`,
      tool: 'send_mail',
      sideEffect: 'remote_mutation',
      turn: 1,
    };

    const operator = await openOperator({ db: target.db });
    try {
      await expect(operator.fork(runId, { atSequence: between, by: 'ana' })).rejects.toMatchObject({
        code: 'FORK_WOULD_RERUN',
        fields: { executionId: runId, atSequence: between, calls: [call] },
      });
      // After the start mark the fork asks (interrupted_side_effect) instead: no flag needed.
      const marked = seqOf('step.completed', 'start:1');
      expect(await operator.fork(runId, { atSequence: marked, by: 'ana' })).toBe(
        `fork-${marked}-of-${runId}`,
      );
    } finally {
      await operator.close();
    }

    // No terminal: refused without the flag, and nothing is written.
    const refused = await loomInProcess(['fork', runId, '--at', String(between)], env);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain('FORK_WOULD_RERUN');
    expect(refused.stderr).toContain("'send_mail' (remote_mutation");
    expect(refused.stderr).toContain('--allow-rerun');
    expect((await loomInProcess(['events', forkId], env)).code).toBe(3);

    // A terminal: the person is asked; "no" writes nothing, "yes" forks.
    const asked: string[] = [];
    const cli = (answer: boolean) =>
      runCli(['fork', runId, '--at', String(between), '--json'], {
        stdout: () => {},
        stderr: () => {},
        env,
        isTty: true,
        confirm: async (question) => {
          asked.push(question);
          return answer;
        },
      });
    expect(await cli(false)).toBe(4);
    expect(asked).toHaveLength(1);
    expect((await loomInProcess(['events', forkId], env)).code).toBe(3);
    expect(await cli(true)).toBe(0);
    expect(asked).toHaveLength(2);
    expect((await loomInProcess(['events', forkId], env)).code).toBe(0);

    // What the flag allows: the fork runs the approved call again, under its own key.
    const flagged = await loomInProcess(
      ['fork', runId, '--at', String(between), '--id', `${forkId}-b`, '--allow-rerun'],
      env,
    );
    expect(flagged.code).toBe(0);
    await driving(async (agents, flows) => {
      await flows.recover();
      expect(await agents.attach(`${forkId}-b`).result()).toMatchObject({
        reason: 'goal_completed',
      });
    });
    expect(mails().filter((line) => line.startsWith(`${forkId}-b/`))).toEqual([`${forkId}-b/1.0`]);
  });
});
