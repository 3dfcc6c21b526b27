// `loom approve --rerun | --record` on the approval a crash leaves behind: a real agent process
// is SIGKILLed inside a remote_mutation tool (after its side effect), restarted, and waits on an
// interrupted_side_effect approval; the built `loom` binary decides it; a third life finishes.
// The tool's side channel (a file) counts its real calls. SQLite file and Postgres.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Approval } from '@loom/agent-loop';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbTargets } from './db-targets.js';
import { loom } from './fixture.js';

const { dir, targets, cleanup } = dbTargets('view-resolution');
const worker = fileURLToPath(new URL('./interrupted-worker.ts', import.meta.url));
afterAll(cleanup);

/** One life of the worker: its exit signal and the line it printed (deadline 60 s). */
function life(
  env: Record<string, string>,
): Promise<{ signal: NodeJS.Signals | null; code: number | null; line: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', worker], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      // Only the life told to die may end by SIGKILL; any other was killed at its deadline.
      if (code !== 0 && (signal !== 'SIGKILL' || env.DIE !== '1')) {
        reject(new Error(`worker exited ${code} (${signal}): ${stderr}`));
        return;
      }
      resolve({ code, signal, line: stdout.trim() });
    });
  });
}

function calls(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : [];
}

describe.each(targets)('loom approve of an interrupted side effect on $name', (target) => {
  const env = { LOOM_DB: target.db };
  // A fresh database (the Postgres schema dropped), migrated: the workers open it after.
  beforeAll(async () => (await target.open()).close());

  /** Kills the first life mid-tool, restarts, and returns the pending approval. */
  async function interrupted(runId: string, sideChannel: string): Promise<Approval> {
    const base = { ...target.env, RUN_ID: runId, SIDE_CHANNEL: sideChannel };
    const first = await life({ ...base, DIE: '1' });
    expect(first.signal).toBe('SIGKILL');
    expect(calls(sideChannel)).toHaveLength(1);
    const second = await life(base);
    expect(second.line).toBe('waiting');
    expect(calls(sideChannel)).toHaveLength(1);
    const listed = await loom(['approvals', '--json'], env);
    expect(listed.code).toBe(0);
    const approval = (JSON.parse(listed.stdout) as Approval[]).find((a) => a.runId === runId);
    expect(approval?.kind).toBe('interrupted_side_effect');
    return approval as Approval;
  }

  it('--record does not call the tool again: one real call, and the run completes', async () => {
    const sideChannel = join(dir, `${target.name}-record.calls`);
    const approval = await interrupted(`${target.name}-record`, sideChannel);

    const both = await loom(['approve', approval.id, '--rerun', '--record', '{}'], env);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('INVALID_ARGUMENT');
    const notJson = await loom(['approve', approval.id, '--record', 'wired'], env);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toContain("--record's output must be JSON");

    const decided = await loom(
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

  it('--rerun calls the tool once more, with the same idempotency key', async () => {
    const sideChannel = join(dir, `${target.name}-rerun.calls`);
    const approval = await interrupted(`${target.name}-rerun`, sideChannel);
    const decided = await loom(['approve', approval.id, '--by', 'ops', '--rerun'], env);
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
  });
});
