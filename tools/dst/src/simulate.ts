import { type Faults, totalFaults } from './faults.js';
import { runSeed, type SeedReport } from './run-seed.js';
import type { SimFlow } from './runtime-adapter.js';
import { type PlannedSignal, type Scenario, signalAt, startAt } from './scenario.js';
import type { SeededRandom } from './seeded-random.js';

/** Most seeds one `simulate` call runs: a larger campaign belongs in the `sim` command. */
export const simulateSeedsMax = 100_000;

/** How `simulate` runs a user's flows. */
export interface SimulateOptions {
  /** How many seeds (1 … n, or from `firstSeed`), or exactly which. Env `LOOM_DST_SEED` runs one. */
  seeds: number | readonly number[];
  /** First seed when `seeds` is a count. Default 1. */
  firstSeed?: number;
  /** What to inject (merged over `defaultFaults`). */
  faults?: Faults;
  /** Simulated nodes sharing the stores. Default 3. */
  nodes?: number;
  /** Executions started per flow. Default 3. */
  executionsPerFlow?: number;
  /** The input of execution `index` of `flow` (default null); draw from `random` to vary it. */
  input?: (flow: SimFlow, index: number, random: SeededRandom) => unknown;
  /**
   * Signals to send, per execution (ids are `<flow name>-<index>`); each is sent at a drawn time
   * with its idempotency key, sometimes twice.
   */
  signals?: (executionId: string) => ReadonlyArray<Omit<PlannedSignal, 'executionId' | 'atMs'>>;
  /** Virtual ms of faults (default 60,000); the world then heals and must settle. */
  horizonMs?: number;
  /** Called after each seed, for progress. */
  onSeed?: (report: SeedReport) => void;
}

/** What a `simulate` call found. */
export interface SimulateSummary {
  seedsRun: number;
  events: number;
  faultsInjected: number;
  /** Seeds that broke an invariant, each with its violations and repro line. */
  failures: SeedReport[];
}

/**
 * Runs `flows` under deterministic simulation: for each seed, several nodes share in-memory
 * stores through a faulty link (latency, transient errors, lost acknowledgements), nodes pause
 * past their leases and restart, every execution of every flow is started by a retrying client,
 * and after the faults stop each execution must have ended; then every invariant is checked.
 * A failing seed reruns alone with `LOOM_DST_SEED=<seed>`.
 *
 * Flows must be deterministic on replay, as for any Loom flow; effects may wait on
 * `effect.clock` (virtual time) but not on real timers or I/O outside the simulation.
 *
 * @example
 * const summary = await simulate([order], { seeds: 50, input: (_flow, i) => ({ sku: `sku-${i}` }) });
 * expect(summary.failures.map((failure) => failure.repro)).toEqual([]);
 */
export async function simulate(
  flows: readonly SimFlow[],
  options: SimulateOptions,
): Promise<SimulateSummary> {
  const scenario = userScenario(flows, options);
  const summary: SimulateSummary = { seedsRun: 0, events: 0, faultsInjected: 0, failures: [] };
  for (const seed of seedList(options)) {
    const report = await runSeed(seed, scenario, {
      ...(options.faults === undefined ? {} : { faults: options.faults }),
      repro: (failing) =>
        `LOOM_DST_SEED=${failing} (rerun this test with it to replay seed ${failing})`,
    });
    summary.seedsRun += 1;
    summary.events += report.events;
    summary.faultsInjected += totalFaults(report.faults);
    if (report.violations.length > 0) summary.failures.push(report);
    options.onSeed?.(report);
  }
  return summary;
}

function seedList(options: SimulateOptions): number[] {
  const pinned = process.env.LOOM_DST_SEED;
  if (pinned !== undefined && pinned !== '') return [Number(pinned)];
  if (typeof options.seeds !== 'number') return [...options.seeds];
  const count = Math.min(options.seeds, simulateSeedsMax);
  const first = options.firstSeed ?? 1;
  return Array.from({ length: count }, (_, index) => first + index);
}

function userScenario(flows: readonly SimFlow[], options: SimulateOptions): Scenario {
  const perFlow = options.executionsPerFlow ?? 3;
  const ids = flows.flatMap((flow) =>
    Array.from({ length: perFlow }, (_, index) => `${flow.name}-${index}`),
  );
  const horizonMs = options.horizonMs ?? 60_000;
  return {
    name: 'user',
    horizonMs,
    nodes: options.nodes ?? 3,
    boot: () => ({ flows, queues: [] }),
    drive(world) {
      const random = world.random.fork('workload');
      for (const flow of flows) {
        for (let index = 0; index < perFlow; index++) {
          const executionId = `${flow.name}-${index}`;
          const startMs = random.int(Math.floor(horizonMs / 2));
          const input = options.input?.(flow, index, random) ?? null;
          startAt(world, startMs, flow, input, executionId);
          for (const signal of options.signals?.(executionId) ?? []) {
            signalAt(world, { ...signal, executionId, atMs: startMs + random.int(horizonMs / 4) });
            if (random.chance(0.5)) {
              signalAt(world, {
                ...signal,
                executionId,
                atMs: startMs + random.int(horizonMs / 2),
              });
            }
          }
        }
      }
    },
    mustSettle: () => ids,
  };
}
