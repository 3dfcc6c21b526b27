import type { LoomError } from '../errors.js';
import type { ExecutionMachine } from './core/execution-machine.js';
import type { ExecutionState } from './core/execution-state.js';
import type { DriverNode } from './driver-node.js';
import type { ExecutionJournal } from './execution-journal.js';
import type { LazyAbort } from './lazy-abort.js';
import type { Suspension } from './suspension.js';

/**
 * What the flow's operations (steps, waits, children) may use of the driver that runs them.
 * The driver keeps its lifecycle state private and hands out only these. Every I/O the
 * operations wait for is now one of the machine's commands (ADR 0046, step 8); what is left here
 * is the order of an operation's work (its awaits on `awaitCompletion`), which the flow binding
 * takes over when this interface goes.
 */
export interface DriverScope {
  readonly executionId: string;
  readonly state: ExecutionState;
  readonly journal: ExecutionJournal;
  /** What the operations use of the node: clock, settings, store. */
  readonly kernel: DriverNode;
  readonly suspension: Suspension;
  /** The execution's machine: what the operations decide without I/O, and what they record. */
  readonly machine: ExecutionMachine;
  /**
   * True when this node's own previous driver of the execution stopped on a transient store
   * failure: a step it left in flight was not cut by a crash, so it is not counted as
   * interrupted (ADR 0031).
   */
  readonly afterStoreFailure: boolean;
  /**
   * Aborts when the execution is cancelled or this node stops driving it. Its `signal` is made
   * on first read: read it only to hand it to an effect.
   */
  readonly abort: LazyAbort;
  /**
   * Throws `CONTEXT_CLOSED` once the flow function returned or threw: an operation called after
   * that must not run its effect or record anything. `operation` and `name` go in the message.
   */
  ensureOpen(operation: string, name?: unknown): void;
  /** Throws if the execution must not go on (stopped, cancelled, continued, or a rule broken). */
  interrupt(): void;
  /**
   * Returns once `wakeAtMs` has passed for operation `op`: at once, after a short in-memory wait, or never (the
   * execution suspends until its timer is due), as a durable sleep does.
   */
  waitUntil(op: number, wakeAtMs: number): Promise<void>;
  /**
   * Resolves on the machine's `complete` command for operation `op` (an armed timer fired, an
   * inbox read, a child's start or lookup, a successor's start returned), with the command's
   * value (a child lookup's answer); rejects on its `failOperation`. Call before carrying out the
   * command that asks for it.
   */
  awaitCompletion(op: number): Promise<unknown>;
  /**
   * Reads the inbox's new signals for operation `op` into the machine's `inbox` (the machine's
   * `readInbox` command, answered by its `inboxRead` input; in flight meanwhile). Rejects with
   * the read's error, or, for a transient store failure, with why this node stopped driving.
   */
  awaitInbox(op: number): Promise<void>;
  /** Hands what the machine queued (records, status, a write this turn) to the journal. */
  carryOut(): void;
  /** Turns a journal failure into the reason this node stopped. */
  stopError(error: unknown): LoomError;
  /** Ends the execution as continued by `successorId`, whatever the flow does next. */
  continueAs(successorId: string): void;
}
