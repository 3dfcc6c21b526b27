// Lives of the interrupted agent worker (interrupted-worker.ts) as child processes, and its side
// channel: what the approve-resolution tests (CLI and dashboard) drive.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Approval } from '@loom/agent-loop';
import { spawnTestProcess } from '@loom/event-runtime/testing';
import { expect } from 'vitest';
import { loom } from './fixture.js';

const worker = fileURLToPath(new URL('./interrupted-worker.ts', import.meta.url));

/** One life of the worker: its exit signal and the line it printed (deadline 60 s). */
export async function life(
  env: Record<string, string>,
): Promise<{ signal: NodeJS.Signals | null; code: number | null; line: string }> {
  const child = spawnTestProcess(worker, { env, deadlineMs: 60_000 });
  const { code, signal } = await child.exit;
  // Only the life told to die may end by SIGKILL; any other was killed at its deadline.
  if (code !== 0 && (signal !== 'SIGKILL' || env.DIE !== '1')) {
    throw new Error(`worker exited ${code} (${signal}): ${child.stderr()}`);
  }
  return { code, signal, line: child.stdout().trim() };
}

/** The tool's real calls so far: one idempotency key per line. */
export function calls(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : [];
}

/**
 * Kills the worker's first life mid-tool (after its side effect), restarts it, and returns the
 * `interrupted_side_effect` approval the run then waits on (listed by the built `loom`).
 */
export async function interruptedApproval(
  workerEnv: Record<string, string>,
  loomEnv: Record<string, string>,
  runId: string,
  sideChannel: string,
): Promise<Approval> {
  const base = { ...workerEnv, RUN_ID: runId, SIDE_CHANNEL: sideChannel };
  const first = await life({ ...base, DIE: '1' });
  expect(first.signal).toBe('SIGKILL');
  expect(calls(sideChannel)).toHaveLength(1);
  const second = await life(base);
  expect(second.line).toBe('waiting');
  expect(calls(sideChannel)).toHaveLength(1);
  const listed = await loom(['approvals', '--json'], loomEnv);
  expect(listed.code).toBe(0);
  const approval = (JSON.parse(listed.stdout) as Approval[]).find((a) => a.runId === runId);
  expect(approval?.kind).toBe('interrupted_side_effect');
  return approval as Approval;
}
