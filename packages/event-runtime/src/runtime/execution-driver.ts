import type { Clock } from '../clock.js';
import type { JsonValue } from '../envelope.js';
import { ErrorCode, isLoomError, LoomError } from '../errors.js';
import { decodePayload, encodePayload } from '../internal/json-codec.js';
import type { ExecutionJournal } from './execution-journal.js';
import type { ExecutionOutcome } from './execution-outcome.js';
import type { ExecutionState } from './execution-state.js';
import {
  checkStepName,
  type EffectContext,
  type Flow,
  type FlowContext,
  type StepOptions,
  type TransactionHandle,
} from './flow.js';
import { EventType, type RecordedError } from './kernel-events.js';
import { recordError } from './recorded-error.js';

/** What the driver needs from its runtime. */
export interface DriverHooks {
  clock: Clock;
  /** Keep step results in the hot state (only needed to take snapshots). */
  keepResults: boolean;
  /** Runs `work` and appends the step's completion in one database transaction. */
  transact?: (
    journal: ExecutionJournal,
    work: (tx: TransactionHandle) => unknown,
    completion: (result: unknown) => { type: string; payload: JsonValue },
  ) => Promise<unknown>;
}

/**
 * Drives one execution on this node: runs the flow function against the state folded from the
 * log, short-circuits recorded steps, runs new effects behind durability barriers, and writes
 * the terminal event. One driver per execution per node; it never re-reads the log.
 */
export class ExecutionDriver {
  readonly abort = new AbortController();
  readonly done: Promise<ExecutionOutcome>;
  private stepCursor = 0;
  private readonly names = new Set<string>();
  /** A broken rule (non-determinism) that fails the execution even if the flow catches it. */
  private fatal: LoomError | undefined;
  /** Why this node stopped driving (ownership lost, shutdown, already started elsewhere). */
  private stopped: LoomError | undefined;
  private cancelReason: string | undefined;
  private resolveDone!: (outcome: ExecutionOutcome) => void;

  constructor(
    readonly state: ExecutionState,
    readonly journal: ExecutionJournal,
    private readonly hooks: DriverHooks,
  ) {
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve;
    });
  }

  get executionId(): string {
    return this.state.executionId;
  }

  /** Stop driving without writing anything more (the log stays as it is for another node). */
  stop(error: LoomError): void {
    if (this.stopped !== undefined) return;
    this.stopped = error;
    this.abort.abort(error);
  }

  /** Ask the execution to end as cancelled at its next barrier. */
  cancel(reason: string): void {
    if (this.cancelReason !== undefined || this.stopped !== undefined) return;
    this.cancelReason = reason;
    this.abort.abort(
      new LoomError(
        ErrorCode.EXECUTION_CANCELLED,
        `execution ${this.executionId} was cancelled: ${reason}`,
        {
          executionId: this.executionId,
          reason,
        },
      ),
    );
  }

  /** Run the flow to its end (or until this node stops driving it). */
  async run(flow: Flow<never, unknown>): Promise<ExecutionOutcome> {
    let terminal: { type: string; payload: JsonValue; outcome: ExecutionOutcome } | undefined;
    try {
      const output = await flow.run(this.context(), this.state.input as never);
      this.interrupt();
      if (this.stepCursor < this.state.steps.length) {
        const recorded = this.state.steps[this.stepCursor];
        throw this.nonDeterminism(
          `the log has step ${this.stepCursor} ('${recorded?.name}') but the flow completed without asking for it`,
          recorded?.name ?? null,
          null,
        );
      }
      const outputValue = toJson(
        output,
        `the output of execution ${this.executionId}`,
        this.executionId,
      );
      terminal = {
        type: EventType.executionCompleted,
        payload: { output: outputValue },
        outcome: { status: 'completed', output: outputValue },
      };
    } catch (thrown) {
      terminal = this.terminalFor(thrown);
    }
    if (terminal === undefined)
      return this.finish({ status: 'stopped', error: this.stopped as LoomError });
    this.journal.record(terminal.type, terminal.payload);
    this.journal.setStatus('settled');
    // State changes with the record (as for steps), so a snapshot taken when it is durable agrees.
    this.applyTerminal(terminal.outcome);
    try {
      await this.journal.flush();
    } catch (error) {
      return this.finish({ status: 'stopped', error: this.stopError(error) });
    }
    return this.finish(terminal.outcome);
  }

  private terminalFor(
    thrown: unknown,
  ): { type: string; payload: JsonValue; outcome: ExecutionOutcome } | undefined {
    if (this.stopped !== undefined) return undefined;
    if (this.cancelReason !== undefined) {
      const reason = this.cancelReason;
      return {
        type: EventType.executionCancelled,
        payload: { reason },
        outcome: { status: 'cancelled', reason },
      };
    }
    const error: RecordedError = recordError(this.fatal ?? thrown);
    return {
      type: EventType.executionFailed,
      payload: { error } as unknown as JsonValue,
      outcome: { status: 'failed', error },
    };
  }

  private applyTerminal(outcome: ExecutionOutcome): void {
    if (outcome.status === 'completed') {
      this.state.status = 'completed';
      this.state.output = outcome.output;
    } else if (outcome.status === 'failed') {
      this.state.status = 'failed';
      this.state.error = outcome.error;
    } else if (outcome.status === 'cancelled') {
      this.state.status = 'cancelled';
      this.state.cancelReason = outcome.reason;
    }
    this.state.nextSequence = this.journal.sequence;
  }

  private finish(outcome: ExecutionOutcome): ExecutionOutcome {
    this.resolveDone(outcome);
    return outcome;
  }

  /** Turns a journal failure into the reason this node stopped. */
  private stopError(error: unknown): LoomError {
    if (this.stopped !== undefined) return this.stopped;
    const stop =
      isLoomError(error, ErrorCode.FENCE_STALE) || isLoomError(error, ErrorCode.SEQUENCE_CONFLICT)
        ? new LoomError(
            ErrorCode.OWNERSHIP_LOST,
            `this node stopped driving execution ${this.executionId}: another writer took it over`,
            { executionId: this.executionId },
            error,
          )
        : isLoomError(error)
          ? error
          : new LoomError(
              ErrorCode.STORE_FAILURE,
              String(error),
              { executionId: this.executionId },
              error,
            );
    this.stop(stop);
    return stop;
  }

  /** Throws if the execution must not go on (stopped, cancelled, or a fatal rule broken). */
  private interrupt(): void {
    if (this.stopped !== undefined) throw this.stopped;
    if (this.fatal !== undefined) throw this.fatal;
    if (this.cancelReason !== undefined) throw this.abort.signal.reason;
  }

  private nonDeterminism(
    message: string,
    expected: string | null,
    actual: string | null,
  ): LoomError {
    this.fatal ??= new LoomError(
      ErrorCode.NON_DETERMINISM,
      `execution ${this.executionId}: ${message}. The flow's code changed under a running ` +
        'execution; pin a version or keep the old path for executions started before the change',
      { executionId: this.executionId, expected, actual },
    );
    return this.fatal;
  }

  /** Waits for a durability barrier; a failed append means this node stops driving. */
  private async barrier(): Promise<void> {
    try {
      await this.journal.flush();
    } catch (error) {
      throw this.stopError(error);
    }
    this.interrupt();
  }

  private context(): FlowContext {
    return {
      executionId: this.executionId,
      signal: this.abort.signal,
      step: (name, fn, options) => this.step(name, fn, options),
      transaction: (name, work) => this.transaction(name, work),
    };
  }

  /** Claims the next step index for `name`, checking the log's record at that index. */
  private claimStep(name: unknown): {
    index: number;
    name: string;
    replay: 'done' | 'rerun' | 'new';
  } {
    this.interrupt();
    const checked = checkStepName(name, this.executionId);
    if (this.names.has(checked)) {
      throw new LoomError(
        ErrorCode.DUPLICATE_STEP_NAME,
        `execution ${this.executionId} already has a step named '${checked}': step names must be ` +
          'unique within an execution (add the loop index to the name)',
        { executionId: this.executionId, step: checked },
      );
    }
    this.names.add(checked);
    const index = this.stepCursor++;
    const recorded = this.state.steps[index];
    if (recorded === undefined) return { index, name: checked, replay: 'new' };
    if (recorded.name !== checked) {
      throw this.nonDeterminism(
        `step ${index} was '${recorded.name}' in the log but the flow asked for '${checked}'`,
        recorded.name,
        checked,
      );
    }
    return { index, name: checked, replay: recorded.status === 'started' ? 'rerun' : 'done' };
  }

  private replayed<T>(index: number): T {
    const recorded = this.state.steps[index];
    if (recorded?.status === 'failed')
      throw stepFailed(this.executionId, index, recorded.name, recorded.error);
    return recorded?.result as T;
  }

  private async step<T>(
    name: string,
    fn: (effect: EffectContext) => T | Promise<T>,
    options: StepOptions | undefined,
  ): Promise<T> {
    const claim = this.claimStep(name);
    if (claim.replay === 'done') return this.replayed<T>(claim.index);
    if (typeof fn !== 'function') {
      throw new LoomError(
        ErrorCode.INVALID_STEP_NAME,
        `step '${claim.name}' needs an effect function`,
        {
          executionId: this.executionId,
        },
      );
    }
    if (claim.replay === 'new') {
      const payload: JsonValue =
        options?.idempotent === true
          ? { index: claim.index, name: claim.name, idempotent: true }
          : { index: claim.index, name: claim.name };
      this.journal.record(EventType.stepStarted, payload);
      this.state.steps[claim.index] = { name: claim.name, status: 'started' };
    }
    await this.barrier();
    let result: T;
    try {
      result = await fn(this.effectContext(claim.index, claim.name));
    } catch (thrown) {
      this.interrupt();
      const error = recordError(thrown);
      this.journal.record(EventType.stepFailed, {
        index: claim.index,
        name: claim.name,
        error,
      } as never);
      this.state.steps[claim.index] = { name: claim.name, status: 'failed', error };
      throw stepFailed(this.executionId, claim.index, claim.name, error, thrown);
    }
    this.interrupt();
    const value = toJson(result, `the result of step '${claim.name}'`, this.executionId);
    this.journal.record(EventType.stepCompleted, {
      index: claim.index,
      name: claim.name,
      result: value,
    });
    this.state.steps[claim.index] = this.hooks.keepResults
      ? { name: claim.name, status: 'completed', result: decodePayload(encodePayload(value)) }
      : { name: claim.name, status: 'completed' };
    return result;
  }

  private async transaction<T>(
    name: string,
    work: (tx: TransactionHandle) => T | Promise<T>,
  ): Promise<T> {
    const claim = this.claimStep(name);
    if (claim.replay === 'done') return this.replayed<T>(claim.index);
    const transact = this.hooks.transact;
    if (transact === undefined) {
      throw new LoomError(
        ErrorCode.TRANSACTIONS_UNSUPPORTED,
        `step '${claim.name}' is transactional, but this runtime's store cannot run transactions: use SQLite or Postgres`,
        { executionId: this.executionId },
      );
    }
    if (claim.replay === 'new') {
      this.journal.record(EventType.stepStarted, {
        index: claim.index,
        name: claim.name,
        transactional: true,
      });
      this.state.steps[claim.index] = { name: claim.name, status: 'started' };
    }
    await this.barrier();
    let value: JsonValue;
    try {
      value = (await transact(this.journal, work, (result) => ({
        type: EventType.stepCompleted,
        payload: {
          index: claim.index,
          name: claim.name,
          result: toJson(result, `the result of step '${claim.name}'`, this.executionId),
        },
      }))) as JsonValue;
    } catch (thrown) {
      if (this.journal.failure !== undefined) throw this.stopError(this.journal.failure);
      this.interrupt();
      // The transaction rolled back: record the failure like any step's.
      const error = recordError(thrown);
      this.journal.record(EventType.stepFailed, {
        index: claim.index,
        name: claim.name,
        error,
      } as never);
      this.state.steps[claim.index] = { name: claim.name, status: 'failed', error };
      throw stepFailed(this.executionId, claim.index, claim.name, error, thrown);
    }
    this.state.steps[claim.index] = this.hooks.keepResults
      ? { name: claim.name, status: 'completed', result: decodePayload(encodePayload(value)) }
      : { name: claim.name, status: 'completed' };
    return value as T;
  }

  private effectContext(index: number, name: string): EffectContext {
    return {
      executionId: this.executionId,
      stepIndex: index,
      stepName: name,
      idempotencyKey: `${this.executionId}/${index}`,
      signal: this.abort.signal,
    };
  }
}

function stepFailed(
  executionId: string,
  index: number,
  name: string,
  error: RecordedError | undefined,
  cause?: unknown,
): LoomError {
  return new LoomError(
    ErrorCode.STEP_FAILED,
    `step ${index} ('${name}') of execution ${executionId} failed: ${error?.message ?? 'unknown error'}`,
    { executionId, step: name, stepIndex: index, error: (error ?? null) as never },
    cause,
  );
}

/** Validates that a value can go in the log; returns it typed as JSON. Throws PAYLOAD_NOT_JSON. */
function toJson(value: unknown, what: string, executionId: string): JsonValue {
  try {
    encodePayload(value === undefined ? null : value, executionId);
  } catch (error) {
    if (isLoomError(error)) {
      throw new LoomError(
        error.code,
        `${what} cannot be stored: ${error.message}`,
        error.fields,
        error,
      );
    }
    throw error;
  }
  return (value === undefined ? null : value) as JsonValue;
}
