// A late approval, with no worker alive: a first runtime records the run and its approval and is
// shut down while the run waits; time passes the expiry on the clock the next runtimes are given;
// an operator's runtime (it runs no agent) tries to decide; then a worker's runtime resumes the run.
// The tool appends a line to a side-channel file each time it runs: the count of its calls.
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend, JsonValue } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { StubModel } from '@loom/reasoning';
import { createRuntime, type Runtime } from '@loom/workflow-runtime';
import { expect } from 'vitest';
import {
  type Agent,
  type AgentRuntime,
  type Approval,
  createAgentRuntime,
  defineAgent,
  defineTool,
} from '../../src/index.js';

export const expiresInMs = 60_000;

/** Opens the backend (a fresh handle on the same database each call) on `clock`. */
export type OpenBackend = (clock: ManualClock) => Promise<Backend>;

function refundAgent(sideChannel: string): Agent {
  const refund = defineTool({
    name: 'refund',
    description: 'Refund an order',
    input: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
    sideEffect: 'remote_mutation',
    run: async (_input, context) => {
      appendFileSync(sideChannel, `${context.idempotencyKey}\n`);
      return 'refunded';
    },
  });
  return defineAgent({
    name: 'refunder',
    model: new StubModel({
      script: (request) =>
        request.messages.some((message) => message.role === 'tool')
          ? { text: 'done' }
          : { toolCalls: [{ tool: 'refund', input: { order: 'o-1' } }] },
    }),
    instructions: 'Refund o-1 once.',
    tools: [refund],
    policy: () => ({ kind: 'require_approval', reason: 'refund', expiresInMs }),
  });
}

interface Life {
  flows: Runtime;
  agents: AgentRuntime;
}

async function life(open: OpenBackend, clock: ManualClock, agent?: Agent): Promise<Life> {
  const flows = createRuntime({
    backend: await open(clock),
    clock,
    ...(agent === undefined ? { timerPollMs: 0 } : {}),
  });
  return {
    flows,
    agents: createAgentRuntime({ flows, agents: agent === undefined ? [] : [agent] }),
  };
}

function callsOf(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

async function pendingOf(agents: AgentRuntime, runId: string): Promise<Approval> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = (await agents.approvals(runId)).find((a) => a.status === 'pending');
    if (found !== undefined) return found;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for a pending approval of ${runId}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Runs `runId` up to its approval in a first life, shuts it down, and returns the approval, the
 * clock's time then, and the side channel.
 */
async function waitingRun(open: OpenBackend, runId: string) {
  const dir = mkdtempSync(join(tmpdir(), 'loom-agent-expiry-'));
  const sideChannel = join(dir, 'refunds.log');
  const agent = refundAgent(sideChannel);
  const clock = new ManualClock();
  const one = await life(open, clock, agent);
  try {
    await one.agents.start(agent, 'go', { runId });
    const approval = await pendingOf(one.agents, runId);
    expect(approval.expiresAtMs).toBe(approval.requestedAtMs + expiresInMs);
    return { approval, sideChannel, agent };
  } finally {
    await one.flows.shutdown();
  }
}

/** A worker's life resumes the run: it ends `approval_expired` and the tool never ran. */
async function resumesExpired(
  open: OpenBackend,
  runId: string,
  atMs: number,
  agent: Agent,
  sideChannel: string,
): Promise<void> {
  const worker = await life(open, new ManualClock(atMs), agent);
  try {
    await worker.flows.recover();
    await worker.flows.wakeDue();
    expect(await worker.agents.attach(runId).result()).toMatchObject({
      reason: 'approval_expired',
    });
    expect(callsOf(sideChannel)).toEqual([]);
    expect((await worker.agents.approvals(runId)).map((a) => a.status)).toEqual(['expired']);
  } finally {
    await worker.flows.shutdown();
  }
}

/** approve() and reject() at the expiry (no worker alive) are refused and write nothing. */
export async function lateApproveRefused(open: OpenBackend, runId: string): Promise<void> {
  const { approval, sideChannel, agent } = await waitingRun(open, runId);
  const expiresAtMs = approval.expiresAtMs as number;
  const operator = await life(open, new ManualClock(expiresAtMs));
  try {
    await expect(
      operator.agents.approve(approval.id, { by: 'ops', requestHash: approval.requestHash }),
    ).rejects.toMatchObject({
      code: 'APPROVAL_EXPIRED',
      fields: { approvalId: approval.id, status: 'expired', expiresAtMs },
    });
    await expect(operator.agents.reject(approval.id, { by: 'ops' })).rejects.toMatchObject({
      code: 'APPROVAL_EXPIRED',
    });
    expect(await operator.flows.store.readSignals(runId)).toEqual([]);
  } finally {
    await operator.flows.shutdown();
  }
  await resumesExpired(open, runId, expiresAtMs + 1, agent, sideChannel);
}

/** A decision sent straight as a signal after the expiry: the run still ends `approval_expired`. */
export async function lateSignalExpires(open: OpenBackend, runId: string): Promise<void> {
  const { approval, sideChannel, agent } = await waitingRun(open, runId);
  const expiresAtMs = approval.expiresAtMs as number;
  const sender = await life(open, new ManualClock(expiresAtMs + 5_000));
  try {
    const key = approval.id.slice(approval.id.lastIndexOf('~') + 1);
    // It even claims to have been decided in time.
    const decision: JsonValue = {
      decision: 'approved',
      by: 'mallory',
      decidedAtMs: expiresAtMs - 1,
      requestHash: approval.requestHash,
    };
    await sender.flows.signal(runId, `approval:${key}`, decision);
  } finally {
    await sender.flows.shutdown();
  }
  await resumesExpired(open, runId, expiresAtMs + 10_000, agent, sideChannel);
}

/**
 * A decision that reached the inbox before the expiry but says it was decided at the expiry (a
 * sender's clock ahead): the run counts it as expired by the two recorded times.
 */
export async function decisionStampedLateExpires(open: OpenBackend, runId: string): Promise<void> {
  const { approval, sideChannel, agent } = await waitingRun(open, runId);
  const expiresAtMs = approval.expiresAtMs as number;
  const sender = await life(open, new ManualClock(expiresAtMs - 1_000));
  try {
    const key = approval.id.slice(approval.id.lastIndexOf('~') + 1);
    await sender.flows.signal(runId, `approval:${key}`, {
      decision: 'approved',
      by: 'ops',
      decidedAtMs: expiresAtMs,
      requestHash: approval.requestHash,
    });
  } finally {
    await sender.flows.shutdown();
  }
  await resumesExpired(open, runId, expiresAtMs + 1_000, agent, sideChannel);
}
