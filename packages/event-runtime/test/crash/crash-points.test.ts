// Crash-point enumeration (issue 14): a worker SIGKILLs itself at each named point around the
// durable writes of one flow, on SQLite and on Postgres; a fresh worker finishes the work. Every
// point must come out right: one terminal event per execution, the child started once, the
// signal delivered once, the transaction's row exactly once, each plain effect at most one
// re-run. The table of points is in docs/reliability.md; `pnpm --filter @loom/event-runtime
// crash:points --backend <b>` prints it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killTestProcesses } from '../../src/testing.js';
import { pgTestUrl, useThrowawaySchemas } from '../support/throwaway-schemas.js';
import { CrashPointRun } from './crash-point-run.js';
import { crashPoints } from './crash-points.js';

const schemas = useThrowawaySchemas();
const directory = mkdtempSync(join(tmpdir(), 'loom-crash-points-'));
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

/**
 * Every point is asserted. Two of them used to lose a race: a signal reaching an execution
 * before its suspension was durable was lost across the kill ('before child.completed', 'after
 * execution.suspended'; fixed by the signal-guarded suspension, ADR 0033), and a step re-sending
 * its signal with the same idempotency key after the receiver had ended got EXECUTION_SETTLED
 * ('after the signal send'; the key is now checked first, on every backend).
 */
describe.each(['sqlite', 'postgres'] as const)('crash points on %s', (backend) => {
  // One test per worker life (each finishes the previous point's work, then dies at its own),
  // in order: a hang names its point, and no test waits for the whole chain.
  const run = new CrashPointRun(
    backend,
    join(directory, backend),
    pgTestUrl,
    schemas.freshSchema(),
  );
  beforeAll(() => run.prepare());

  for (const [index, point] of crashPoints.entries()) {
    it(`the worker finished the previous point's work and died at ${index}: ${point.name}`, async () => {
      expect(await run.point(index)).toBe(true);
    });
  }

  it('after each point a fresh worker finishes with the right outcome', async () => {
    const outcomes = await run.outcomes();
    for (const outcome of outcomes) {
      console.log(
        `${backend} | ${outcome.point} | died ${outcome.died} | re-runs ${outcome.reruns} | wrong ${outcome.wrong.length === 0 ? 0 : outcome.wrong.join('; ')}`,
      );
    }
    expect(outcomes.length).toBe(crashPoints.length);
    const wrong = outcomes.filter((outcome) => outcome.wrong.length > 0);
    expect(wrong).toEqual([]);
  });
});
