import type { Clock } from '../clock.js';
import type { JsonValue } from '../envelope.js';
import type { EventStore } from '../event-store.js';
import type { ChildLookup } from './core/execution-outcome.js';
import type { ExecutionState } from './core/execution-state.js';
import type { Flow } from './flow.js';
import type { RuntimeSettings } from './runtime-options.js';

/**
 * What a driver uses of the node's links (`ExecutionLinks`) to carry out the machine's child and
 * successor commands.
 */
export interface ChildLinks {
  /** Starts a child execution of `parent` (idempotent on its id). */
  startChild(
    flow: Flow<never, unknown>,
    input: JsonValue,
    childId: string,
    parent: { executionId: string; index: number },
  ): Promise<void>;
  /**
   * A child's outcome if it settled (following continue-as-new), undefined while it runs, and
   * `childMissing` when it has no log at all (its parent recorded `child.started` and died before
   * starting it).
   */
  childOutcome(childId: string): Promise<ChildLookup>;
  /** Starts the continue-as-new successor of `predecessor` (idempotent on its id). */
  startSuccessor(
    flow: Flow<never, unknown>,
    input: JsonValue,
    successorId: string,
    predecessor: ExecutionState,
  ): Promise<void>;
}

/**
 * What the flow's operations (steps, waits, children) use of the node that drives them, through
 * `DriverScope.kernel`: the settings, the clock and the store (a step's transaction). The inbox,
 * the links to other executions and the suspect lane are the driver's, which carries out the
 * machine's commands for them (ADR 0046, step 8). Narrower than the node's `KernelContext`, which
 * satisfies it, and in a file of its own so that the operations do not import the node (ADR 0046,
 * step 1).
 */
export interface DriverNode {
  readonly settings: RuntimeSettings;
  /** The one source of time and timers of everything the node does. */
  readonly clock: Clock;
  readonly store: EventStore;
}
