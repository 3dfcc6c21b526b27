// Decisions the run must not take at face value, on a SQLite file and on Postgres: an
// interrupted call approved without saying how (re-run or record) is refused and never re-runs;
// a decision sent straight as a signal is listed as the run decided it; deciding on a run that
// has ended is APPROVAL_NOT_PENDING with the run's state (and while a run waits, the execution
// index says it waits for an approval or an answer). Real calls are counted in a file the tool
// writes.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { type EventStore, EventType } from '@loom/event-runtime';
import { createRuntime, type Runtime } from '@loom/workflow-runtime';
import { describe, expect, it } from 'vitest';
import { eventually, stubBy } from './agent.test-support.js';
import { callsIn, durableBackends } from './durable-backends.test-support.js';
import {
  type Agent,
  type AgentRuntime,
  type Approval,
  createAgentRuntime,
  defineAgent,
  defineTool,
  isLoomError,
  type Policy,
} from './index.js';

const { dir, backends } = durableBackends('decisions');
let cases = 0;

/** A refund agent whose tool writes each call to `file`; while `hang()`, a call never returns. */
function refundAgent(file: string, hang: () => boolean, policy?: Policy): Agent {
  const refund = defineTool({
    name: 'refund',
    description: 'Refund the order',
    input: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
    sideEffect: 'remote_mutation',
    run: async (_input, context) => {
      appendFileSync(file, `${context.idempotencyKey}\n`);
      if (hang()) {
        await new Promise((_, reject) =>
          context.signal.addEventListener('abort', () => reject(context.signal.reason)),
        );
      }
      return { refunded: true };
    },
  });
  return defineAgent({
    name: 'refunds',
    model: stubBy((_n, request) =>
      request.messages.some((m) => m.role === 'tool')
        ? { text: 'done' }
        : { toolCalls: [{ tool: 'refund', input: { order: 'o-1' } }] },
    ),
    instructions: 'Refund order o-1.',
    tools: [refund],
    policy: policy ?? (() => ({ kind: 'allow' })),
  });
}

interface Live {
  flows: Runtime;
  agents: AgentRuntime;
  file: string;
  runId: string;
  approval: Approval;
}

/**
 * A run whose refund call a stopped process left mid-call: a second process recovers it and
 * the run waits on the call's `interrupted_side_effect` approval (the tool ran once).
 */
async function interrupted(store: EventStore, name: string): Promise<Live> {
  const file = join(dir, `${name}.calls`);
  const runId = `run-${name}`;
  let hang = true;
  const firstAgent = refundAgent(file, () => hang);
  const first = createRuntime({ store, nodeId: `${name}-first` });
  const before = createAgentRuntime({ flows: first, agents: [firstAgent] });
  await before.start(firstAgent, 'refund o-1', { runId });
  await eventually(async () => (callsIn(file) === 1 ? true : undefined), 'the refund started');
  await first.shutdown();
  hang = false;
  const agent = refundAgent(file, () => false);
  const flows = createRuntime({ store, nodeId: `${name}-second`, recoverQuietMs: 0 });
  const agents = createAgentRuntime({ flows, agents: [agent] });
  await flows.recover();
  const approval = await eventually(
    async () => (await agents.approvals(runId)).find((a) => a.status === 'pending'),
    'the interrupted_side_effect approval',
    20_000,
  );
  expect(approval.kind).toBe('interrupted_side_effect');
  expect(callsIn(file)).toBe(1);
  return { flows, agents, file, runId, approval };
}

async function codeOf(promise: Promise<unknown>): Promise<{ code?: string; fields?: unknown }> {
  try {
    await promise;
  } catch (error) {
    return isLoomError(error)
      ? { code: error.code, fields: error.fields }
      : { code: `not a LoomError: ${String(error)}` };
  }
  return {};
}

describe.each(backends)('decisions on %s', (_name, openStore) => {
  it('a plain approve of an interrupted call is refused (RESOLUTION_REQUIRED) and never re-runs it; recording its outcome ends the run', async () => {
    const name = `plain-${cases++}`;
    const store = await openStore(name);
    const live = await interrupted(store, name);
    try {
      const refused = await codeOf(live.agents.approve(live.approval.id, { by: 'ana' }));
      expect(refused.code).toBe('RESOLUTION_REQUIRED');
      expect(refused.fields).toMatchObject({ approvalId: live.approval.id });
      const [still] = await live.agents.approvals(live.runId);
      expect(still?.status).toBe('pending');

      await live.agents.approve(live.approval.id, {
        by: 'ana',
        resolution: { kind: 'record', output: { refunded: 'by hand' } },
      });
      const result = await live.agents.attach(live.runId).result();
      expect(result.reason).toBe('goal_completed');
      expect(callsIn(live.file)).toBe(1);
      // The log says how the call was resolved, not only who approved it.
      const [decided] = await live.agents.approvals(live.runId);
      expect(decided?.decision?.resolution).toEqual({
        kind: 'record',
        output: { refunded: 'by hand' },
      });
      const received = (await store.read(live.runId)).find(
        (e) => e.type === EventType.signalReceived,
      );
      expect(received?.payload).toMatchObject({
        payload: { decision: 'approved', resolution: { kind: 'record' } },
      });
    } finally {
      await live.flows.shutdown();
      await store.close();
    }
  });

  it('an approval of an interrupted call sent straight as a signal without a resolution never re-runs it: the run ends, listed as refused', async () => {
    const name = `bare-signal-${cases++}`;
    const store = await openStore(name);
    const live = await interrupted(store, name);
    try {
      const key = live.approval.id.slice(live.approval.id.lastIndexOf('~') + 1);
      await live.flows.signal(live.runId, `approval:${key}`, {
        decision: 'approved',
        by: 'mallory',
        decidedAtMs: Date.now(),
        requestHash: live.approval.requestHash,
      });
      const result = await live.agents.attach(live.runId).result();
      expect(result.reason).toBe('approval_rejected');
      expect(callsIn(live.file)).toBe(1);
      const [listed] = await live.agents.approvals(live.runId);
      expect(listed?.status).toBe('rejected');
      expect(listed?.refused).toContain('resolution');
    } finally {
      await live.flows.shutdown();
      await store.close();
    }
  });

  it('a decision with a wrong hash sent straight as a signal is listed as the run decided it: rejected, never approved', async () => {
    const name = `wrong-hash-${cases++}`;
    const store = await openStore(name);
    const file = join(dir, `${name}.calls`);
    const runId = `run-${name}`;
    const agent = refundAgent(
      file,
      () => false,
      () => ({ kind: 'require_approval', reason: 'refunds need a person' }),
    );
    const flows = createRuntime({ store });
    try {
      const agents = createAgentRuntime({ flows, agents: [agent] });
      const run = await agents.start(agent, 'refund o-1', { runId });
      const approval = await eventually(
        async () => (await agents.approvals(runId)).find((a) => a.status === 'pending'),
        'the tool_call approval',
      );
      await flows.signal(runId, `approval:${approval.id.slice(approval.id.lastIndexOf('~') + 1)}`, {
        decision: 'approved',
        by: 'mallory',
        decidedAtMs: Date.now(),
        requestHash: 'not-the-hash-of-this-request',
      });
      const result = await run.result();
      expect(result.reason).toBe('approval_rejected');
      expect(callsIn(file)).toBe(0);
      const [listed] = await agents.approvals(runId);
      expect(listed?.status).toBe('rejected');
      expect(listed?.refused).toBe('the decision named another request');
      expect(listed?.decision?.by).toBe('mallory');
    } finally {
      await flows.shutdown();
      await store.close();
    }
  });

  it("approve, reject and answer on a cancelled run are refused as not pending, with the run's state", async () => {
    const name = `cancelled-${cases++}`;
    const store = await openStore(name);
    const file = join(dir, `${name}.calls`);
    const agent = refundAgent(
      file,
      () => false,
      () => ({ kind: 'require_approval', reason: 'refunds need a person' }),
    );
    const asker = defineAgent({
      name: 'asker',
      model: stubBy(() => ({ toolCalls: [{ tool: 'ask_human', input: { question: 'Which?' } }] })),
      instructions: 'Ask.',
      tools: [],
      askHuman: true,
    });
    const flows = createRuntime({ store });
    try {
      const agents = createAgentRuntime({ flows, agents: [agent, asker] });
      await agents.start(agent, 'refund o-1', { runId: `run-${name}` });
      await agents.start(asker, 'ask', { runId: `ask-${name}` });
      const approval = await eventually(
        async () => (await agents.approvals(`run-${name}`)).find((a) => a.status === 'pending'),
        'the tool_call approval',
      );
      const question = await eventually(
        async () => (await agents.questions(`ask-${name}`)).find((q) => q.status === 'pending'),
        'the question',
      );
      // While they wait, the execution index says for what: an approval, an answer (ADR 0062).
      const waitingFor = (id: string) =>
        eventually(async () => {
          const row = (await store.findExecutions({ status: 'suspended' })).find(
            (found) => found.executionId === id,
          );
          return row?.waitingFor;
        }, `${id} suspended`);
      expect(await waitingFor(`run-${name}`)).toEqual(['approval']);
      expect(await waitingFor(`ask-${name}`)).toEqual(['question']);
      expect(await agents.cancel(`run-${name}`, { by: 'ops' })).toBe(true);
      expect(await agents.cancel(`ask-${name}`, { by: 'ops' })).toBe(true);
      for (const decide of [
        () => agents.approve(approval.id, { by: 'ana' }),
        () => agents.reject(approval.id, { by: 'ana' }),
      ]) {
        expect(await codeOf(decide())).toMatchObject({
          code: 'APPROVAL_NOT_PENDING',
          fields: { approvalId: approval.id, runStatus: 'cancelled' },
        });
      }
      expect(
        await codeOf(agents.answer(question.id, { by: 'ana', text: 'that one' })),
      ).toMatchObject({
        code: 'QUESTION_NOT_PENDING',
        fields: { questionId: question.id, runStatus: 'cancelled' },
      });
      expect(callsIn(file)).toBe(0);
    } finally {
      await flows.shutdown();
      await store.close();
    }
  });
});
