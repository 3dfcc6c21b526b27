import { createHash } from 'node:crypto';
import type { EventStore, ExecutionSummary, StoredEvent } from '@loom/event-runtime';
import { defaultFaults, type FaultCounts, type Faults } from './faults.js';
import { describeError } from './internal/client.js';
import { checkInvariants } from './invariants.js';
import { simRuntimeSettings } from './runtime-adapter.js';
import type { Scenario } from './scenario.js';
import { seededRandom } from './seeded-random.js';
import { SimWorld, type Violation } from './sim-world.js';

/** Virtual ms between two draws of node faults (pause, restart) for each node. */
const chaosEveryMs = 1_000;
/** Virtual ms the clock moves per step of the run loop. */
const runStepMs = 1_000;
/** After the faults stop, how long (virtual ms) the world may take to settle. */
const settleMsMax = 600_000;

/** What one seed did and found. */
export interface SeedReport {
  seed: number;
  scenario: string;
  /** sha-256 of the whole log and every inbox: equal for equal seeds, byte for byte. */
  logHash: string;
  events: number;
  executions: number;
  faults: FaultCounts;
  violations: readonly Violation[];
  /** What the scenario's workload did, by name (scenarios that count it; else empty). */
  stats: Record<string, number>;
  /** The command that runs this seed again. */
  repro: string;
}

/** How {@link runSeed} runs: what to inject, and how its repro line reads. */
export interface RunSeedOptions {
  faults?: Faults;
  /** How to rerun a seed, given the seed (default: the `sim` command of this package). */
  repro?: (seed: number) => string;
}

/**
 * Runs one seed of a scenario: builds the world, lets the nodes, the client calls and the faults
 * play out on the virtual clock, heals, waits for the world to settle, then checks every
 * invariant. `Math.random` draws from the seed while it runs (the kernel's `ctx.random()` and
 * retry jitter use it); seeds run one at a time.
 *
 * @example
 * const report = await runSeed(7, mixedScenario);
 * if (report.violations.length > 0) console.log(report.repro);
 */
export async function runSeed(
  seed: number,
  scenario: Scenario,
  options: RunSeedOptions = {},
): Promise<SeedReport> {
  const faults = { ...defaultFaults, ...options.faults };
  const random = seededRandom(seed);
  const world = new SimWorld(random, faults);
  const realRandom = Math.random;
  Math.random = random.fork('math-random').next;
  // A rejection nobody handles would crash a real process: a violation, reported with the seed.
  const unhandled = (reason: unknown) => {
    world.violation('no-unhandled-rejection', `would crash the process: ${describeError(reason)}`);
  };
  process.on('unhandledRejection', unhandled);
  try {
    world.addNodes(scenario.nodes, scenario.boot(world));
    scenario.drive(world);
    armChaos(world, scenario.horizonMs);
    const { clock } = world;
    const endMs = clock.now() + scenario.horizonMs;
    while (clock.now() < endMs) await clock.advance(runStepMs);
    world.heal();
    const mustSettle = scenario.mustSettle(world);
    const deadlineMs = clock.now() + settleMsMax;
    while (clock.now() < deadlineMs) {
      await clock.advance(runStepMs);
      if (await settled(world, mustSettle)) break;
    }
    const log = await readWholeLog(world.stores.events);
    const index = await readIndex(world.stores.events);
    const violations = [
      ...world.violations,
      ...(await checkInvariants({
        events: world.stores.events,
        recorder: world.recorder,
        log,
        index,
        mustSettle,
        nowMs: clock.now(),
        wakeGraceMs: 4 * simRuntimeSettings.timerPollMs + 10 * runStepMs,
      })),
      ...((await scenario.check?.(world, log)) ?? []),
    ];
    return {
      seed,
      scenario: scenario.name,
      logHash: await hashLog(world.stores.events, log, index),
      events: log.length,
      executions: index.length,
      faults: { ...world.recorder.faults },
      violations,
      stats: {
        ...((await scenario.stats?.(world, log)) ?? {}),
        batchedWrites: world.recorder.batches.writes,
        batchedAppends: world.recorder.batches.appends,
        batchedWritesFailed: world.recorder.batches.failed,
      },
      repro: (options.repro ?? defaultRepro(scenario.name, faults))(seed),
    };
  } finally {
    scenario.end?.(world);
    Math.random = realRandom;
    process.off('unhandledRejection', unhandled);
  }
}

function defaultRepro(scenario: string, faults: Faults): (seed: number) => string {
  const bug = faults.injectBug === undefined ? '' : ` --bug ${faults.injectBug}`;
  const torn =
    faults.tornConnection === defaultFaults.tornConnection
      ? ''
      : ` --torn ${faults.tornConnection ?? 0}`;
  return (seed) => `pnpm --filter @loom/dst sim --scenario ${scenario} --seed ${seed}${bug}${torn}`;
}

/** Draws, every `chaosEveryMs` until the horizon, whether each node pauses or restarts. */
function armChaos(world: SimWorld, horizonMs: number): void {
  const random = world.random.fork('chaos');
  const { faults } = world;
  for (let atMs = chaosEveryMs; atMs < horizonMs; atMs += chaosEveryMs) {
    world.clock.setTimer(() => {
      for (const node of world.nodes) {
        if (!node.running) continue;
        if (random.chance(faults.restart ?? 0)) {
          world.recorder.faults.restarts += 1;
          node.restart();
        } else if (random.chance(faults.pause ?? 0)) {
          world.recorder.faults.pauses += 1;
          node.pause(random.between(100, faults.pauseMsMax ?? 8_000));
        }
      }
    }, atMs);
  }
}

async function settled(world: SimWorld, mustSettle: readonly string[]): Promise<boolean> {
  if (!mustSettle.every((id) => world.recorder.settled.has(id))) return false;
  const running = await world.stores.events.findExecutions({ status: 'running', limit: 1 });
  return running.length === 0;
}

async function readWholeLog(store: EventStore): Promise<StoredEvent[]> {
  const log: StoredEvent[] = [];
  for (;;) {
    const page = await store.readAll({ afterPosition: log.at(-1)?.position ?? 0 });
    if (page.length === 0) return log;
    log.push(...page);
  }
}

async function readIndex(store: EventStore): Promise<ExecutionSummary[]> {
  const rows: ExecutionSummary[] = [];
  for (;;) {
    const last = rows.at(-1)?.executionId;
    const page = await store.findExecutions(last === undefined ? {} : { afterExecutionId: last });
    if (page.length === 0) return rows;
    rows.push(...page);
  }
}

async function hashLog(
  store: EventStore,
  log: readonly StoredEvent[],
  index: readonly ExecutionSummary[],
): Promise<string> {
  const hash = createHash('sha256');
  for (const event of log) hash.update(`${JSON.stringify(event)}\n`);
  for (const row of index) {
    hash.update(`${JSON.stringify(row)}\n`);
    for (const signal of await store.readSignals(row.executionId))
      hash.update(`${JSON.stringify(signal)}\n`);
  }
  return hash.digest('hex');
}
