import type { StoredEvent } from '@loom/event-runtime';
import type { SimFlow } from './runtime-adapter.js';
import type { NodeBoot } from './sim-node.js';
import type { SimWorld, Violation } from './sim-world.js';

/** One signal a scenario sends: to whom, when, and with which idempotency key. */
export interface PlannedSignal {
  executionId: string;
  name: string;
  payload: unknown;
  idempotencyKey: string;
  /** Virtual ms after the simulation starts. */
  atMs: number;
}

/**
 * What a seed runs: the flows every node boots with, the client calls on the virtual timeline,
 * and the executions that must have ended when the faults stop and the world settles.
 */
export interface Scenario {
  readonly name: string;
  /** Virtual ms during which the workload runs and the faults strike. */
  readonly horizonMs: number;
  readonly nodes: number;
  boot(world: SimWorld): NodeBoot;
  /** Arms the client calls on the world's clock (draws from the world's random streams). */
  drive(world: SimWorld): void;
  /** Executions that must end in a terminal event once the world settles. */
  mustSettle(world: SimWorld): readonly string[];
  /** The scenario's own invariants, checked after the common ones (the whole log in commit order). */
  check?(world: SimWorld, log: readonly StoredEvent[]): Promise<Violation[]>;
  /** Counts of what the workload did (for the report: runs by ending, approvals, …). */
  stats?(world: SimWorld, log: readonly StoredEvent[]): Promise<Record<string, number>>;
  /** Called when the seed ends, checked or not (to undo what `boot` switched on). */
  end?(world: SimWorld): void;
}

/** Starts an execution at `atMs` through any running node, retrying like a careful client. */
export function startAt(
  world: SimWorld,
  atMs: number,
  flow: SimFlow,
  input: unknown,
  executionId: string,
): void {
  world.clock.setTimer(() => {
    void world.client.retryAny(`start ${executionId}`, (node) =>
      node.runtime.start(flow, input, executionId),
    );
  }, atMs);
}

/** Sends a signal at its planned time; a settled execution is an accepted outcome. */
export function signalAt(world: SimWorld, signal: PlannedSignal): void {
  world.clock.setTimer(() => {
    void world.client.retryAny(
      `signal ${signal.name} to ${signal.executionId}`,
      async (node) => {
        await node.runtime.signal(
          signal.executionId,
          signal.name,
          signal.payload,
          signal.idempotencyKey,
        );
        world.recorder.signals.push({
          executionId: signal.executionId,
          name: signal.name,
          idempotencyKey: signal.idempotencyKey,
        });
      },
      (error) => {
        // Not started yet (its start is still being retried): the client tries again later.
        if (isCode(error, 'EXECUTION_NOT_FOUND')) return 'retry';
        return isCode(error, 'EXECUTION_SETTLED') ? 'done' : undefined;
      },
    );
  }, signal.atMs);
}

function isCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}
