// Re-asked approvals and the wall-time budget across a restart, on a SQLite file: a first
// runtime records the run and its asks, and is shut down (the file closed) while the run waits;
// a second runtime on the same file, a new clock and a fresh agent definition, decides and
// finishes it. The tool appends a line to a side-channel file each time it runs.
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventType } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { StubModel } from '@loom/reasoning';
import { createRuntime, type Runtime } from '@loom/workflow-runtime';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import { describe, expect, it } from 'vitest';
import {
  type Agent,
  type AgentRuntime,
  type Approval,
  createAgentRuntime,
  defineAgent,
  defineTool,
} from '../../src/index.js';

const expiresInMs = 60_000;

/** The agent as each process defines it: the answer depends on the prompt, not a call count. */
function mailAgent(sideChannel: string, wallTimeMsMax?: number): Agent {
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
  return defineAgent({
    name: 'mailer',
    model: new StubModel({
      script: (request) =>
        request.messages.some((message) => message.role === 'tool')
          ? { text: 'mailed' }
          : { toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] },
    }),
    instructions: 'Mail ana once.',
    tools: [send],
    policy: () => ({ kind: 'require_approval', reason: 'mail', expiresInMs, onExpire: 're-ask' }),
    ...(wallTimeMsMax === undefined ? {} : { limits: { wallTimeMsMax } }),
  });
}

interface Life {
  agent: Agent;
  clock: ManualClock;
  flows: Runtime;
  agents: AgentRuntime;
}

function life(path: string, agent: Agent, clock: ManualClock): Life {
  const flows = createRuntime({ backend: openSqlite({ path, migrate: true, clock }), clock });
  return { agent, clock, flows, agents: createAgentRuntime({ flows, agents: [agent] }) };
}

async function pending(agents: AgentRuntime, runId: string, ask: number): Promise<Approval> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = (await agents.approvals(runId)).find(
      (a) => a.status === 'pending' && (a.ask ?? 1) === ask,
    );
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`no pending ask ${ask} of ${runId}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function linesOf(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

describe('a re-asked approval survives a restart (SQLite file)', () => {
  it('the re-ask is decided from a second runtime; the expired id refuses; the tool runs once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'h-agent-limits-reask-'));
    const path = join(dir, 'loom.db');
    const sideChannel = join(dir, 'sent.log');

    const one = life(path, mailAgent(sideChannel), new ManualClock());
    await one.agents.start(one.agent, 'go', { runId: 'mail-1' });
    const first = await pending(one.agents, 'mail-1', 1);
    await one.clock.advance(expiresInMs);
    await one.flows.wakeDue();
    const second = await pending(one.agents, 'mail-1', 2);
    await one.flows.shutdown();

    const two = life(path, mailAgent(sideChannel), new ManualClock(one.clock.now()));
    try {
      await two.flows.recover();
      const approvals = await two.agents.approvals('mail-1');
      expect(approvals.map((a) => [a.id, a.status])).toEqual([
        [first.id, 'expired'],
        [second.id, 'pending'],
      ]);
      expect(second).toMatchObject({ requestHash: first.requestHash, previousId: first.id });
      await expect(
        two.agents.approve(first.id, { by: 'ops', requestHash: first.requestHash }),
      ).rejects.toMatchObject({ code: 'APPROVAL_NOT_PENDING', fields: { status: 'expired' } });
      expect(linesOf(sideChannel)).toEqual([]);

      await two.agents.approve(second.id, { by: 'ops', requestHash: first.requestHash });
      await two.flows.wakeDue();
      expect(await two.agents.attach('mail-1').result()).toMatchObject({
        reason: 'goal_completed',
        output: 'mailed',
      });
      expect(linesOf(sideChannel)).toEqual(['mail-1/1.0']);
      expect((await two.agents.approvals('mail-1')).map((a) => a.status)).toEqual([
        'expired',
        'approved',
      ]);
    } finally {
      await two.flows.shutdown();
    }
  });

  it('the wall-time budget runs from the start the log recorded, not from the restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'h-agent-limits-wall-'));
    const path = join(dir, 'loom.db');
    const sideChannel = join(dir, 'sent.log');
    const budgetMs = 90_500;

    const one = life(path, mailAgent(sideChannel, budgetMs), new ManualClock());
    const startMs = one.clock.now();
    await one.agents.start(one.agent, 'go', { runId: 'mail-2' });
    await pending(one.agents, 'mail-2', 1);
    await one.clock.advance(expiresInMs);
    await one.flows.wakeDue();
    await pending(one.agents, 'mail-2', 2);
    await one.flows.shutdown();

    // The second life starts later than the first stopped: its budget is not a fresh one.
    const two = life(path, mailAgent(sideChannel, budgetMs), new ManualClock(startMs + 70_000));
    try {
      await two.flows.recover();
      const run = two.agents.attach('mail-2');
      expect(await two.clock.runUntilSettled(run.result())).toMatchObject({
        reason: 'limit_time',
      });
      const waits = (await two.flows.store.read('mail-2'))
        .filter((event) => event.type === EventType.signalWaiting)
        .map((event) => (event.payload as { timeoutAtMs: number }).timeoutAtMs);
      // The first ask waits until its expiry; the re-ask until the budget, not its own expiry.
      expect(waits).toEqual([startMs + expiresInMs, startMs + budgetMs]);
      expect(linesOf(sideChannel)).toEqual([]);
    } finally {
      await two.flows.shutdown();
    }
  });
});
