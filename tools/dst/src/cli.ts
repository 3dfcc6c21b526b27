// `pnpm --filter @loom/dst sim [--seeds N] [--from S] [--seed S] [--scenario mixed|agent] [--bug …] [--torn P]`:
// runs seeds of the built-in scenario, prints progress, and one repro line per failing seed.
// Exits 1 when any seed broke an invariant.
import { parseArgs } from 'node:util';
import { agentScenario } from './agent-scenario.js';
import type { Faults } from './faults.js';
import { mixedScenario } from './mixed-scenario.js';
import { runSeed } from './run-seed.js';
import { updateScenario } from './update-scenario.js';

const scenarios = { mixed: mixedScenario, agent: agentScenario, updates: updateScenario } as const;
/** Seeds between two progress lines. */
const progressEvery = 100;

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '100' },
    from: { type: 'string', default: '1' },
    seed: { type: 'string' },
    scenario: { type: 'string', default: 'mixed' },
    bug: { type: 'string' },
    torn: { type: 'string' },
    verbose: { type: 'boolean', default: false },
  },
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
});

const scenario = scenarios[values.scenario as keyof typeof scenarios];
if (scenario === undefined) {
  console.error(
    `unknown scenario '${values.scenario}': one of ${Object.keys(scenarios).join(', ')}`,
  );
  process.exit(2);
}
const torn = values.torn === undefined ? undefined : Number(values.torn);
if (torn !== undefined && !(torn >= 0 && torn <= 1)) {
  console.error('--torn takes a probability from 0 to 1 (0: no torn connections)');
  process.exit(2);
}
const faults: Faults = {
  ...(values.bug === undefined
    ? {}
    : { injectBug: values.bug as NonNullable<Faults['injectBug']> }),
  ...(torn === undefined ? {} : { tornConnection: torn }),
};
const first = Number(values.seed ?? values.from);
const count = values.seed === undefined ? Number(values.seeds) : 1;
if (!Number.isSafeInteger(first) || !Number.isSafeInteger(count) || count < 1) {
  console.error('--seeds, --from and --seed take whole numbers (--seeds at least 1)');
  process.exit(2);
}

const totals = {
  seeds: 0,
  failed: 0,
  events: 0,
  transientErrors: 0,
  lostAcks: 0,
  tornConnections: 0,
  refusedWhileReconnecting: 0,
  pauses: 0,
  restarts: 0,
  bugs: 0,
};
const stats: Record<string, number> = {};
const startedAtMs = performance.now();
for (let seed = first; seed < first + count; seed++) {
  const report = await runSeed(seed, scenario, { faults });
  totals.seeds += 1;
  totals.events += report.events;
  for (const kind of [
    'transientErrors',
    'lostAcks',
    'tornConnections',
    'refusedWhileReconnecting',
    'pauses',
    'restarts',
    'bugs',
  ] as const) {
    totals[kind] += report.faults[kind];
  }
  for (const [name, n] of Object.entries(report.stats)) stats[name] = (stats[name] ?? 0) + n;
  if (values.verbose || count === 1) {
    console.log(
      `seed ${seed}: ${report.events} events, log ${report.logHash}, faults ${JSON.stringify(report.faults)}`,
    );
  }
  if (report.violations.length > 0) {
    totals.failed += 1;
    for (const violation of report.violations) {
      console.log(
        `  seed ${seed} ${violation.invariant}${violation.executionId ? ` ${violation.executionId}` : ''}: ${violation.detail}`,
      );
    }
    console.log(`FAILED seed ${seed}; repro: ${report.repro}`);
  }
  if (totals.seeds % progressEvery === 0 || totals.seeds === count) {
    const seconds = (performance.now() - startedAtMs) / 1_000;
    console.log(
      `${totals.seeds}/${count} seeds, ${totals.failed} failed, ${totals.events} events, faults: ` +
        `${totals.transientErrors} transient errors, ${totals.lostAcks} lost acks, ` +
        `${totals.tornConnections} torn connections (${totals.refusedWhileReconnecting} calls refused while reconnecting), ` +
        `${totals.pauses} pauses, ` +
        `${totals.restarts} restarts${totals.bugs > 0 ? `, ${totals.bugs} injected bugs` : ''} (${seconds.toFixed(1)} s)`,
    );
  }
}
if (Object.keys(stats).length > 0) {
  console.log(
    `${scenario.name} workload: ${Object.entries(stats)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, n]) => `${name} ${n}`)
      .join(', ')}`,
  );
}
process.exit(totals.failed > 0 ? 1 : 0);
