// Runs a crash worker, kills it with SIGKILL at seeded random moments, restarts it, and
// reports what happened. Shared by the crash tests of every backend.
import { join } from 'node:path';
import { spawnTestProcess, testProcessDeadlineMs } from '../../src/testing.js';

/** mulberry32: a tiny seeded PRNG, so a kill schedule reproduces from its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const worker = join(import.meta.dirname, 'crash-worker.ts');

/**
 * Starts the worker `kills` times, each time killing it (SIGKILL) a random 20..`maxDelayMs` ms
 * after it said ready (the delays drawn from `random`). Returns how many kills landed: a worker
 * that had finished everything is not killed.
 */
export async function killRounds(
  env: Record<string, string>,
  kills: number,
  random: () => number,
  maxDelayMs: number,
): Promise<number> {
  let landed = 0;
  for (let round = 0; round < kills; round++) {
    const run = spawnTestProcess(worker, { env });
    // A worker that finished everything before saying ready has nothing left to kill.
    await run.line('ready', testProcessDeadlineMs).catch(() => undefined);
    const delayMs = 20 + Math.floor(random() * (maxDelayMs - 20));
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (!run.exited() && run.child.kill('SIGKILL')) landed += 1;
    const { code } = await run.exit;
    if (code !== null && code !== 0)
      throw new Error(`worker failed (exit ${code}):\n${run.output()}`);
  }
  return landed;
}

/** Runs the worker once more, unkilled, to completion; returns what it printed. */
export async function runToCompletion(env: Record<string, string>): Promise<string> {
  const last = spawnTestProcess(worker, { env });
  const { code } = await last.exit;
  if (code !== 0) throw new Error(`final worker failed (exit ${code}):\n${last.output()}`);
  return last.output();
}
