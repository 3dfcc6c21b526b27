import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/sqlite.js';
import { checkCrashRun } from './crash-checks.js';
import { runWithKills } from './crash-harness.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-crash-sqlite-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const execs = 200;
const steps = 5;
const concurrency = 8;

it('SQLite: 200 executions survive 20 SIGKILLs with exactly-once completion', async () => {
  const seed = Number(process.env.LOOM_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
  console.log(
    `crash test seed ${seed} (rerun: LOOM_CRASH_SEED=${seed} pnpm --filter @loom/event-runtime test crash-sqlite)`,
  );
  const db = join(directory, 'crash.db');
  const effects = join(directory, 'effects.log');
  writeFileSync(effects, '');
  const run = await runWithKills(
    {
      LOOM_CRASH_BACKEND: 'sqlite',
      LOOM_CRASH_DB: db,
      LOOM_CRASH_EFFECTS: effects,
      LOOM_CRASH_EXECS: String(execs),
      LOOM_CRASH_STEPS: String(steps),
      LOOM_CRASH_CONCURRENCY: String(concurrency),
    },
    20,
    seed,
    400,
  );
  const store = SqliteEventStore.open({ path: db, readOnly: true });
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
