// `loom approve --rerun | --record` on the approval a crash leaves behind: a real agent process
// is SIGKILLed inside a remote_mutation tool (after its side effect), restarted, and waits on an
// interrupted_side_effect approval; `loom approve` (the CLI in process) decides it; a third life
// finishes.
// The tool's side channel (a file) counts its real calls. SQLite file and Postgres.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbTargets } from './db-targets.js';
import { loomInProcess } from './fixture.js';
import { calls, interruptedApproval, life } from './interrupted-life.js';

const { dir, targets, cleanup } = dbTargets('view-resolution');
afterAll(cleanup);

describe.each(targets)('loom approve of an interrupted side effect on $name', (target) => {
  const env = { LOOM_DB: target.db };
  // A fresh database (the Postgres schema dropped), migrated: the workers open it after.
  beforeAll(async () => (await target.open()).close());

  const interrupted = (runId: string, sideChannel: string) =>
    interruptedApproval(target.env, env, runId, sideChannel);

  it('--record does not call the tool again: one real call, and the run completes', async () => {
    const sideChannel = join(dir, `${target.name}-record.calls`);
    const approval = await interrupted(`${target.name}-record`, sideChannel);

    const both = await loomInProcess(['approve', approval.id, '--rerun', '--record', '{}'], env);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('INVALID_ARGUMENT');
    const notJson = await loomInProcess(['approve', approval.id, '--record', 'wired'], env);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toContain("--record's output must be JSON");

    const decided = await loomInProcess(
      ['approve', approval.id, '--by', 'ops', '--record', '{"wired":"ana"}', '--json'],
      env,
    );
    expect(decided.code).toBe(0);
    expect(JSON.parse(decided.stdout)).toEqual({
      approvalId: approval.id,
      decision: 'approved',
      by: 'ops',
    });
    const third = await life({
      ...target.env,
      RUN_ID: `${target.name}-record`,
      SIDE_CHANNEL: sideChannel,
    });
    expect(third.line).toMatch(/^result /);
    expect(JSON.parse(third.line.slice('result '.length))).toMatchObject({
      reason: 'goal_completed',
      output: 'wired',
    });
    expect(calls(sideChannel)).toHaveLength(1);
  });

  it('a plain loom approve (neither --rerun nor --record) is refused: RESOLUTION_REQUIRED, the tool is not called again', async () => {
    const runId = `${target.name}-plain`;
    const sideChannel = join(dir, `${runId}.calls`);
    const approval = await interrupted(runId, sideChannel);
    const plain = await loomInProcess(['approve', approval.id, '--by', 'ops'], env);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain('RESOLUTION_REQUIRED');
    expect(plain.stderr).toContain('--rerun');
    const listed = await loomInProcess(['approvals', '--json'], env);
    const still = (JSON.parse(listed.stdout) as { id: string; status: string }[]).find(
      (a) => a.id === approval.id,
    );
    expect(still?.status).toBe('pending');
    // Rejected instead: the run ends, and the tool ran only in the life that was killed.
    const rejected = await loomInProcess(['reject', approval.id, '--by', 'ops'], env);
    expect(rejected.code).toBe(0);
    const third = await life({ ...target.env, RUN_ID: runId, SIDE_CHANNEL: sideChannel });
    expect(JSON.parse(third.line.slice('result '.length))).toMatchObject({
      reason: 'approval_rejected',
    });
    expect(calls(sideChannel)).toHaveLength(1);
  });

  it('--rerun calls the tool once more, with the same idempotency key', async () => {
    const sideChannel = join(dir, `${target.name}-rerun.calls`);
    const approval = await interrupted(`${target.name}-rerun`, sideChannel);
    const decided = await loomInProcess(['approve', approval.id, '--by', 'ops', '--rerun'], env);
    expect(decided.code).toBe(0);
    expect(decided.stdout).toBe(`approved ${approval.id} (by ops)\n`);
    const third = await life({
      ...target.env,
      RUN_ID: `${target.name}-rerun`,
      SIDE_CHANNEL: sideChannel,
    });
    expect(JSON.parse(third.line.slice('result '.length))).toMatchObject({
      reason: 'goal_completed',
    });
    const lines = calls(sideChannel);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe(lines[0]);
    // The log says how the call was resolved, and `loom show` says it.
    const shown = await loomInProcess(['show', `${target.name}-rerun`], env);
    expect(shown.stdout).toMatch(/ops \(re-run\)/);
  });
});
