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
import { killRounds, runToCompletion, seededRandom } from './crash-harness.js';

const execs = 200;
const steps = 5;
const concurrency = 8;
const kills = 20;
const killsPerTest = 5;

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

  // The kills come in rounds of `killsPerTest`, each round its own test within the default
  // timeout, then the verdict: 20 process starts take 25-50 s on a loaded 2-core box.
  const seed = Number(process.env.LOOM_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const random = seededRandom(seed);
  const effects = join(directory, 'effects.log');
  const workerEnv = (): Record<string, string> => ({
    ...env(directory),
    LOOM_CRASH_EFFECTS: effects,
    LOOM_CRASH_EXECS: String(execs),
    LOOM_CRASH_STEPS: String(steps),
    LOOM_CRASH_CONCURRENCY: String(concurrency),
  });
  let landed = 0;
  let rounds = 0;
  for (let first = 0; first < kills; first += killsPerTest) {
    const count = Math.min(killsPerTest, kills - first);
    it(`${backend}: SIGKILLs ${first + 1}-${first + count} of ${kills}, at random moments of a run of ${execs} executions`, async () => {
      // Each round continues the one before it: a failed round fails the rest.
      expect(rounds, 'the rounds before this one all ran').toBe(first);
      if (first === 0) {
        console.log(
          `crash test seed ${seed} (rerun: LOOM_CRASH_SEED=${seed} pnpm --filter @loom/event-runtime test crash-${backend})`,
        );
        writeFileSync(effects, '');
      }
      landed += await killRounds(workerEnv(), count, random, 400);
      rounds += count;
    });
  }

  it(`${backend}: after the kills, every one of the ${execs} executions completed exactly once`, async () => {
    expect(rounds, 'every round of kills ran').toBe(kills);
    await runToCompletion(workerEnv());
    const store = await openReader(directory);
    const verdict = await checkCrashRun(store, effects, execs, steps);
    await store.close();
    console.log(`seed ${seed}: ${landed} kills, ${verdict.reruns} effect re-runs`);
    expect(landed).toBeGreaterThanOrEqual(15);
    for (const [id, count] of verdict.terminalEvents) expect(count, id).toBe(1);
    expect(verdict.duplicateCompletions).toEqual([]);
    expect(verdict.missingEffects).toEqual([]);
    for (const output of verdict.outputs.values()) expect(output).toBe((steps * (steps - 1)) / 2);
    expect(verdict.outputs.size).toBe(execs);
    // Each kill interrupts at most the steps in flight: one per running execution.
    expect(verdict.reruns).toBeLessThanOrEqual(landed * concurrency);
  });
}
