export { agentBugs, agentScenario } from './agent-scenario.js';
export {
  defaultFaults,
  emptyFaultCounts,
  type FaultCounts,
  type Faults,
  noFaults,
  totalFaults,
} from './faults.js';
export { checkInvariants, type InvariantInput } from './invariants.js';
export { mixedScenario, plainFlow, signalFlow, sleepFlow, tickFlow } from './mixed-scenario.js';
export { NodeClock } from './node-clock.js';
export { type RunSeedOptions, runSeed, type SeedReport } from './run-seed.js';
export { type SimFlow, type SimRuntime, simRuntimeSettings } from './runtime-adapter.js';
export { type PlannedSignal, type Scenario, signalAt, startAt } from './scenario.js';
export { type SeededRandom, seededRandom } from './seeded-random.js';
export { type NodeBoot, SimNode } from './sim-node.js';
export { SimWorld, simStartMs, type Violation } from './sim-world.js';
export {
  type SimulateOptions,
  type SimulateSummary,
  simulate,
  simulateSeedsMax,
} from './simulate.js';
export { bump, updateFlow, updateScenario } from './update-scenario.js';
