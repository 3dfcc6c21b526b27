// `loom worker --flows <module>` with a module that exports an agent, as the built binary on a
// SQLite file and on a Postgres schema: a run started elsewhere waits for a person's approval;
// the worker, which registered the agent's flow, is the only process driving; `loom approve`
// (the CLI in this test's process, not the worker's) lets the run go on, and the worker calls
// the tool (once) and ends the run.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Agent, createAgentRuntime, type RunResult } from '@loom/agent-loop';
import { killTestProcesses } from '@loom/event-runtime/testing';
import { createRuntime } from '@loom/workflow-runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { dbTargets } from './db-targets.js';
import { eventually, loomInProcess } from './fixture.js';
import { spawnLoomWorker } from './worker/loom-worker.js';

const { dir, targets, cleanup } = dbTargets('worker-agents');
afterAll(async () => {
  await killTestProcesses();
  await cleanup();
});

const agentsModule = join(import.meta.dirname, 'worker', 'agents.mjs');
const effectsOf = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => line !== '')
    : [];

/** `promise`, or a rejection naming `what` after `ms`. */
function within<T>(promise: Promise<T>, what: string, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe.each(targets)('loom worker running an agent on $name', (target) => {
  it('runs the agent module: the run a person approved (loom approve) ends on the worker, its tool called once', async () => {
    const effects = join(dir, `${target.name}.effects`);
    process.env.AGENT_EFFECTS = effects;
    const { refunder } = (await import(agentsModule)) as { refunder: Agent };
    const runId = `refund-${target.name}`;

    // Started here, where it reaches the approval and suspends; then this runtime stops.
    const starter = createRuntime({
      backend: await target.open(),
      timerPollMs: 0,
      recoverEveryMs: 0,
    });
    const starting = createAgentRuntime({ flows: starter, agents: [refunder] });
    await starting.start(refunder, 'refund order A-17', { runId });
    const approvalId = await eventually(async () => {
      const pending = (await starting.approvals(runId)).find((a) => a.status === 'pending');
      return pending?.id;
    }, 'the refund approval');
    await starter.shutdown();
    expect(effectsOf(effects)).toEqual([]);

    const worker = spawnLoomWorker(['--db', target.db, '--flows', agentsModule, '--poll', '50'], {
      AGENT_EFFECTS: effects,
    });
    await worker.ready;
    expect(worker.lines().find((line) => line.startsWith('loom: worker '))).toContain(
      'agents refunder',
    );

    const approved = await loomInProcess(['approve', approvalId, '--by', 'ana'], {
      LOOM_DB: target.db,
    });
    expect(approved.code, approved.stderr).toBe(0);

    // Read from a runtime that drives nothing: only the worker can end the run.
    const reader = createRuntime({
      backend: await target.open(),
      timerPollMs: 0,
      recoverEveryMs: 0,
    });
    try {
      const readerAgents = createAgentRuntime({ flows: reader, agents: [refunder] });
      const result: RunResult = await within(
        readerAgents.attach(runId).result(),
        'the run to end on the worker',
        30_000,
      );
      expect(result).toMatchObject({ reason: 'goal_completed', output: 'refund done', turns: 2 });
      expect(effectsOf(effects)).toEqual([`${runId}/1.0`]);
    } finally {
      await reader.shutdown();
    }

    worker.child.kill('SIGTERM');
    expect((await worker.exit).code).toBe(0);
    expect(worker.lines().some((line) => line.includes('drained'))).toBe(true);
  });
});
