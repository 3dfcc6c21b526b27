import type { Clock } from '../clock.js';
import type { JsonValue, StoredSignal } from '../envelope.js';
import type { ExecutionJournal } from './execution-journal.js';
import type { ExecutionOutcome } from './execution-outcome.js';
import type { ExecutionState } from './execution-state.js';
import type { Flow, TransactionHandle } from './flow.js';

/** What the driver needs from its runtime. */
export interface DriverHooks {
  clock: Clock;
  /** Keep step results in the hot state (only needed to take snapshots). */
  keepResults: boolean;
  /** Waits at most this long in memory for a due timer; longer waits suspend the execution. */
  inlineWaitMs: number;
  /** Runs `work` and appends the step's completion in one database transaction. */
  transact?: (
    journal: ExecutionJournal,
    work: (tx: TransactionHandle) => unknown,
    completion: (result: unknown) => { type: string; payload: JsonValue; payloadText?: string },
  ) => Promise<unknown>;
  readSignals(executionId: string, afterSignalId: number): Promise<StoredSignal[]>;
  /** Starts a child execution (idempotent on its id). */
  startChild(
    flow: Flow<never, unknown>,
    input: JsonValue,
    childId: string,
    parent: { executionId: string; index: number },
  ): Promise<void>;
  /** A child's outcome if it settled (following continue-as-new), else undefined. */
  childOutcome(childId: string): Promise<ExecutionOutcome | undefined>;
  /** Starts the continue-as-new successor (idempotent on its id). */
  startSuccessor(
    flow: Flow<never, unknown>,
    input: JsonValue,
    successorId: string,
    predecessor: ExecutionState,
  ): Promise<void>;
}
