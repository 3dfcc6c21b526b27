import { expect } from 'vitest';
import { totalFaults } from '../faults.js';
import { mixedScenario } from '../mixed-scenario.js';
import { runSeed } from '../run-seed.js';

/**
 * Seeds per CI file (two files). Measured on the shared 2-core machine: 100 seeds of the mixed
 * scenario take 14–24 s, and 2 × 250 seeds took 2 min of wall time, so 2 × 150 keeps the budget
 * near a minute and a half (see docs/reliability.md).
 */
export const ciSeedsPerFile = 150;

/** Runs `count` seeds from `first`; fails listing each failing seed's violations and repro line. */
export async function runCiBudget(first: number, count: number): Promise<void> {
  const failures: string[] = [];
  let faults = 0;
  let tears = 0;
  let events = 0;
  for (let seed = first; seed < first + count; seed++) {
    const report = await runSeed(seed, mixedScenario);
    events += report.events;
    faults += totalFaults(report.faults);
    tears += report.faults.tornConnections;
    for (const violation of report.violations) {
      failures.push(
        `seed ${seed} ${violation.invariant}${violation.executionId ? ` ${violation.executionId}` : ''}: ${violation.detail}; repro: ${report.repro}`,
      );
    }
  }
  console.log(
    `dst: seeds ${first}..${first + count - 1}: ${events} events, ${faults} faults injected (${tears} torn connections), ${failures.length} violations`,
  );
  expect(failures).toEqual([]);
  expect(faults).toBeGreaterThan(count);
  expect(tears).toBeGreaterThan(0);
}
