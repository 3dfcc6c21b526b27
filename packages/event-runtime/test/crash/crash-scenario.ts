// The crash test's scenario, the same for every durable backend: a worker drives 200
// executions of a 5-step flow, is SIGKILLed 20 times at seeded random moments and restarted,
// then the log and the effects file are checked.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { EventStore } from '../../src/index.js';
import { killTestProcesses } from '../../src/testing.js';
import { checkCrashRun } from './crash-checks.js';
import { runWithKills } from './crash-harness.js';

const execs = 200;
const steps = 5;
const concurrency = 8;
const kills = 20;

/**
 * Registers the crash test for one backend. `env` tells the worker which store to open;
 * `openReader` opens a read-only view of the same log for the verdict.
 */
export function crashScenario(
  backend: string,
  env: (directory: string) => Record<string, string>,
  openReader: (directory: string) => Promise<EventStore>,
): void {
  const directory = mkdtempSync(join(tmpdir(), `loom-crash-${backend}-`));
  afterAll(async () => {
    await killTestProcesses();
    rmSync(directory, { recursive: true, force: true });
  });

  it(`${backend}: ${execs} executions survive ${kills} SIGKILLs with exactly-once completion`, async () => {
    const seed = Number(process.env.LOOM_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(
      `crash test seed ${seed} (rerun: LOOM_CRASH_SEED=${seed} pnpm --filter @loom/event-runtime test crash-${backend})`,
    );
    const effects = join(directory, 'effects.log');
    writeFileSync(effects, '');
    const run = await runWithKills(
      {
        ...env(directory),
        LOOM_CRASH_EFFECTS: effects,
        LOOM_CRASH_EXECS: String(execs),
        LOOM_CRASH_STEPS: String(steps),
        LOOM_CRASH_CONCURRENCY: String(concurrency),
      },
      kills,
      seed,
      400,
    );
    const store = await openReader(directory);
    const verdict = await checkCrashRun(store, effects, execs, steps);
    await store.close();
    console.log(`seed ${seed}: ${run.kills} kills, ${verdict.reruns} effect re-runs`);
    expect(run.kills).toBeGreaterThanOrEqual(15);
    for (const [id, count] of verdict.terminalEvents) expect(count, id).toBe(1);
    expect(verdict.duplicateCompletions).toEqual([]);
    expect(verdict.missingEffects).toEqual([]);
    for (const output of verdict.outputs.values()) expect(output).toBe((steps * (steps - 1)) / 2);
    expect(verdict.outputs.size).toBe(execs);
    // Each kill interrupts at most the steps in flight: one per running execution.
    expect(verdict.reruns).toBeLessThanOrEqual(run.kills * concurrency);
  }, 300_000);
}
