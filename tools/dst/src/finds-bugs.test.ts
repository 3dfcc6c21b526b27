import { describe, expect, it } from 'vitest';
import { mixedScenario } from './mixed-scenario.js';
import { runSeed, type SeedReport } from './run-seed.js';

/** Seeds searched for an injected bug: well inside the CI budget. */
const searchSeedsMax = 20;

async function firstFailing(bug: 'drop-acked-append'): Promise<SeedReport | undefined> {
  for (let seed = 1; seed <= searchSeedsMax; seed++) {
    const report = await runSeed(seed, mixedScenario, { faults: { injectBug: bug } });
    if (report.violations.length > 0) return report;
  }
  return undefined;
}

describe('the simulator finds a re-introduced bug', () => {
  it('a store that acknowledges an append it never wrote: acked-not-lost names the seed', async () => {
    const failing = await firstFailing('drop-acked-append');
    expect(failing, `no seed of ${searchSeedsMax} caught the dropped append`).toBeDefined();
    const report = failing as SeedReport;
    expect(report.faults.bugs).toBeGreaterThan(0);
    expect(report.violations.map((violation) => violation.invariant)).toContain('acked-not-lost');
    expect(report.repro).toBe(`pnpm --filter @loom/dst sim --scenario mixed --seed ${report.seed}`);
    // The repro replays it: the same seed fails the same way.
    const again = await runSeed(report.seed, mixedScenario, {
      faults: { injectBug: 'drop-acked-append' },
    });
    expect(again.violations).toEqual(report.violations);
  });
});
