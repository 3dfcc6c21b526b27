import { expect } from 'vitest';
import { totalFaults } from '../faults.js';
import { mixedScenario } from '../mixed-scenario.js';
import { runSeed } from '../run-seed.js';
import type { Scenario } from '../scenario.js';

/**
 * Seeds of the mixed scenario per CI file (two files). Measured on the shared 2-core machine:
 * 100 seeds of the mixed scenario take 14–24 s, and 2 × 250 seeds took 2 min of wall time. It
 * was 2 × 150; since the agent scenario joined the budget (`ciAgentSeeds`, a third file), 2 × 120
 * keeps the whole budget about as long as before (see docs/reliability.md).
 */
export const ciSeedsPerFile = 120;

/** Seeds of the agent scenario in CI (one file); a seed costs about what a mixed one does. */
export const ciAgentSeeds = 80;

/**
 * Runs `count` seeds from `first`; fails listing each failing seed's violations and repro line.
 * Returns the scenario's workload counts summed over the seeds.
 */
export async function runCiBudget(
  first: number,
  count: number,
  scenario: Scenario = mixedScenario,
): Promise<Record<string, number>> {
  const failures: string[] = [];
  let faults = 0;
  let tears = 0;
  let events = 0;
  const stats: Record<string, number> = {};
  for (let seed = first; seed < first + count; seed++) {
    const report = await runSeed(seed, scenario);
    events += report.events;
    faults += totalFaults(report.faults);
    tears += report.faults.tornConnections;
    for (const [name, n] of Object.entries(report.stats)) stats[name] = (stats[name] ?? 0) + n;
    for (const violation of report.violations) {
      failures.push(
        `seed ${seed} ${violation.invariant}${violation.executionId ? ` ${violation.executionId}` : ''}: ${violation.detail}; repro: ${report.repro}`,
      );
    }
  }
  console.log(
    `dst: ${scenario.name} seeds ${first}..${first + count - 1}: ${events} events, ${faults} faults injected (${tears} torn connections), ${failures.length} violations` +
      (Object.keys(stats).length === 0 ? '' : `; ${JSON.stringify(stats)}`),
  );
  expect(failures).toEqual([]);
  expect(faults).toBeGreaterThan(count);
  expect(tears).toBeGreaterThan(0);
  return stats;
}
