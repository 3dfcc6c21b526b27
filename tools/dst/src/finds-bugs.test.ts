import { describe, expect, it } from 'vitest';
import { agentScenario } from './agent-scenario.js';
import type { Faults } from './faults.js';
import { ciAgentSeeds } from './internal/ci-budget.js';
import { mixedScenario } from './mixed-scenario.js';
import { runSeed, type SeedReport } from './run-seed.js';
import type { Scenario } from './scenario.js';

type Bug = NonNullable<Faults['injectBug']>;

/** The first seed from `first` (at most `count` seeds) whose run breaks an invariant. */
async function firstFailing(
  bug: Bug,
  first: number,
  count: number,
  scenario: Scenario,
): Promise<SeedReport | undefined> {
  for (let seed = first; seed < first + count; seed++) {
    const report = await runSeed(seed, scenario, { faults: { injectBug: bug } });
    if (report.violations.length > 0) return report;
  }
  return undefined;
}

async function expectCaught(
  bug: Bug,
  invariant: string,
  first: number,
  count: number,
  scenario: Scenario = mixedScenario,
): Promise<SeedReport> {
  const failing = await firstFailing(bug, first, count, scenario);
  expect(failing, `no seed of ${first}..${first + count - 1} caught ${bug}`).toBeDefined();
  const report = failing as SeedReport;
  expect(report.faults.bugs).toBeGreaterThan(0);
  expect(report.violations.map((violation) => violation.invariant)).toContain(invariant);
  expect(report.repro).toBe(
    `pnpm --filter @loom/dst sim --scenario ${scenario.name} --seed ${report.seed} --bug ${bug}`,
  );
  // The repro replays it: the same seed fails the same way.
  const again = await runSeed(report.seed, scenario, { faults: { injectBug: bug } });
  expect(again.violations).toEqual(report.violations);
  return report;
}

describe('the simulator finds a re-introduced bug', () => {
  it('a store that acknowledges an append it never wrote: acked-not-lost, with the seed', async () => {
    await expectCaught('drop-acked-append', 'acked-not-lost', 1, 20);
  });

  it('a store that does not check the fence: a zombie append after a takeover, with the seed', async () => {
    // Rarer: the zombie's append must land on a free sequence. Seeds 5000..5299 caught it 14
    // times with torn connections on (first at 5026); this searches 40 of them.
    await expectCaught('ignore-fence', 'one-owner-per-epoch', 5_000, 40);
  });

  it('the agent loop re-running an interrupted non-idempotent call unasked: agent-tool-at-most-once, within the CI budget', async () => {
    // A crash or a takeover between a call's start mark and its result; the bug runs the call
    // again instead of asking a person. Seeds 1..30 caught it 6 times, first at seed 9.
    const report = await expectCaught(
      'rerun-interrupted-tool',
      'agent-tool-at-most-once',
      1,
      ciAgentSeeds,
      agentScenario,
    );
    expect(report.seed).toBeLessThanOrEqual(ciAgentSeeds);
  });

  it('the agent loop asking the model again for a recorded decision: agent-decision-memoized', async () => {
    // Every resume replays the run's turns, so the first run that waited for an approval shows it.
    await expectCaught('forget-decisions', 'agent-decision-memoized', 1, 3, agentScenario);
  });

  it('with no bug switched on, the agent seeds that catch them keep every invariant', async () => {
    const report = await runSeed(9, agentScenario);
    expect(report.violations).toEqual([]);
    expect(report.faults.bugs).toBe(0);
  });
});
