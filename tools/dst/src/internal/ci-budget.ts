import { expect, it } from 'vitest';
import { totalFaults } from '../faults.js';
import { mixedScenario } from '../mixed-scenario.js';
import { runSeed } from '../run-seed.js';
import type { Scenario } from '../scenario.js';

/**
 * Seeds of the mixed scenario per CI file (two files). It was 2 × 150, then 2 × 120 when the agent
 * scenario joined the budget (`ciAgentSeeds`, a third file; see docs/reliability.md). A mixed seed
 * has since grown about fourfold (queue flow control with debounced bursts and cancel-mode
 * singletons, event waits as child executions: 5,247 events per 20 seeds against 3,893 before the
 * last two, and more simulated time): 120 seeds took 39 s of CPU on 2026-12-07 against 9–12 s of
 * wall on 2026-12-01. 2 × 60 keeps the CI budget near what it was; the campaigns in
 * docs/reliability.md run the hundreds. Since then a claim's observation no longer decodes every
 * item the run enqueued (twice) at each claim: 20 seeds 14.1 -> 5.3 s of CPU, same trace.
 */
export const ciSeedsPerFile = 60;

/** Seeds of the agent scenario in CI (one file); a seed costs about what a mixed one does. */
export const ciAgentSeeds = 80;

/** Seeds per test of a CI file: one test stays well inside the 60 s test timeout under load. */
export const ciSeedsPerTest = 20;

/** What a run of seeds found and did, summed over its seeds. */
interface SeedTotals {
  failures: string[];
  faults: number;
  tears: number;
  events: number;
  stats: Record<string, number>;
}

async function runSeeds(
  first: number,
  count: number,
  scenario: Scenario,
  totals: SeedTotals,
): Promise<void> {
  const failures: string[] = [];
  for (let seed = first; seed < first + count; seed++) {
    const report = await runSeed(seed, scenario);
    totals.events += report.events;
    totals.faults += totalFaults(report.faults);
    totals.tears += report.faults.tornConnections;
    for (const [name, n] of Object.entries(report.stats)) {
      totals.stats[name] = (totals.stats[name] ?? 0) + n;
    }
    for (const violation of report.violations) {
      failures.push(
        `seed ${seed} ${violation.invariant}${violation.executionId ? ` ${violation.executionId}` : ''}: ${violation.detail}; repro: ${report.repro}`,
      );
    }
  }
  totals.failures.push(...failures);
  expect(failures).toEqual([]);
}

/**
 * Registers the tests of `count` seeds from `first`: one per `ciSeedsPerTest` seeds (each fails
 * listing its failing seeds' violations and repro lines), then one that checks the faults were
 * injected (more than one per seed, some torn connections) and hands `check` the scenario's
 * workload counts summed over all the seeds.
 */
export function ciBudgetTests(
  first: number,
  count: number,
  scenario: Scenario = mixedScenario,
  check: (stats: Record<string, number>) => void = () => {},
): void {
  const totals: SeedTotals = { failures: [], faults: 0, tears: 0, events: 0, stats: {} };
  let ran = 0;
  for (let from = first; from < first + count; from += ciSeedsPerTest) {
    const size = Math.min(ciSeedsPerTest, first + count - from);
    it(`seeds ${from}..${from + size - 1} of the ${scenario.name} scenario keep every invariant`, async () => {
      await runSeeds(from, size, scenario, totals);
      ran += size;
    });
  }
  it(`seeds ${first}..${first + count - 1} of the ${scenario.name} scenario met the faults and the workload they are about`, () => {
    console.log(
      `dst: ${scenario.name} seeds ${first}..${first + count - 1}: ${totals.events} events, ${totals.faults} faults injected (${totals.tears} torn connections), ${totals.failures.length} violations` +
        (Object.keys(totals.stats).length === 0 ? '' : `; ${JSON.stringify(totals.stats)}`),
    );
    expect(ran).toBe(count);
    expect(totals.faults).toBeGreaterThan(count);
    expect(totals.tears).toBeGreaterThan(0);
    check(totals.stats);
  });
}
