import type { JsonValue } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { isTransactional } from '../event-store.js';
import { decodePayload } from '../internal/json-codec.js';
import type { StepRecord } from './core/execution-state.js';
import {
  EventType,
  type StepAttemptStartedPayload,
  type StepFailedPayload,
  type StepInterruptedPayload,
} from './core/kernel-events.js';
import { recordError } from './core/recorded-error.js';
import {
  encodeRecorded,
  recordedValue,
  replayedValue,
  stepFailed,
} from './core/recorded-values.js';
import { type ResolvedRetry, resolveRetry } from './core/step-retry-policy.js';
import type { Claim, DriverScope } from './driver-scope.js';
import { never } from './driver-support.js';
import type { KernelStepOptions, StepEffectContext, TransactionHandle } from './flow.js';

/**
 * `ctx.step` and `ctx.transaction`: run an effect behind a durability barrier once, record its
 * result or failure, and return the recorded one on replay.
 */
export class StepOperations {
  constructor(private readonly scope: DriverScope) {}

  /**
   * `ctx.step`: the effect runs once, after its `step.started` is durable; with a retry policy,
   * again after each retryable failure, each failure journaled (`step.attempt_failed`) and made
   * durable before the backoff, which is a durable timer.
   */
  async step<T>(
    name: string,
    fn: (effect: StepEffectContext) => T | Promise<T>,
    options: KernelStepOptions | undefined,
  ): Promise<T> {
    const { executionId, state, suspension } = this.scope;
    this.scope.ensureOpen('step', name);
    if (suspension.suspending) return never();
    // Checked before the claim: a bad policy is the caller's mistake, like a bad name.
    const retry = this.retryOf(options);
    const claim = this.scope.claim('step', name);
    if (claim.recorded !== undefined && claim.recorded.status !== 'started')
      return this.replayed<T>(claim.index);
    if (typeof fn !== 'function') {
      throw new LoomError(
        ErrorCode.INVALID_STEP_NAME,
        `step '${claim.name}' needs an effect function`,
        {
          executionId,
        },
      );
    }
    let releaseLane: (() => void) | undefined;
    if (
      claim.recorded !== undefined &&
      claim.recorded.retryAtMs === undefined &&
      claim.recorded.reopened !== true &&
      !this.scope.afterStoreFailure
    ) {
      // Replayed with its attempt in flight: the driver before this one stopped while the effect
      // ran (a crash, a lost lease). It runs again alone, in the node's lane, and is counted
      // durably (the barrier below) before it does, so a step that kills its process every time
      // ends as poison instead of looping, and the steps that were merely beside it when it did
      // are not counted for it (ADR 0031).
      releaseLane = await this.scope.kernel.suspects.acquire();
      try {
        this.scope.ensureOpen('step', name);
        this.interrupted(claim, state.steps[claim.index] as StepRecord);
      } catch (error) {
        releaseLane();
        throw error;
      }
    }
    try {
      return await this.attempts(claim, fn, options, retry, releaseLane);
    } finally {
      releaseLane?.();
    }
  }

  /** Runs the step's attempts (after the first one's effect settled, gives the lane back). */
  private async attempts<T>(
    claim: Claim,
    fn: (effect: StepEffectContext) => T | Promise<T>,
    options: KernelStepOptions | undefined,
    retry: ResolvedRetry | undefined,
    releaseLane: (() => void) | undefined,
  ): Promise<T> {
    const { journal, state, suspension } = this.scope;
    if (claim.recorded === undefined) {
      const payload: JsonValue =
        options?.idempotent === true
          ? { index: claim.index, name: claim.name, idempotent: true }
          : { index: claim.index, name: claim.name };
      journal.record(EventType.stepStarted, payload);
      state.steps[claim.index] = { name: claim.name, status: 'started' };
    }
    for (;;) {
      const record = state.steps[claim.index] as StepRecord;
      if (record.retryAtMs !== undefined) {
        await this.scope.waitUntil(record.retryAtMs);
        this.scope.interrupt();
      }
      const attempt = (record.attempts ?? 0) + 1;
      if (record.retryAtMs !== undefined || record.reopened === true)
        this.attemptStarted(claim, attempt);
      suspension.beginInFlight();
      try {
        await this.scope.barrier();
        // The flow returned while this step (never awaited) waited for its barrier: the execution
        // has ended and nothing could record the effect's outcome, so the effect must not run.
        if (this.scope.ended()) return never();
        let result: T;
        try {
          result = await fn(this.effectContext(claim.index, claim.name, attempt));
        } catch (thrown) {
          this.scope.interrupt();
          if (retry === undefined || !this.retryable(retry, attempt, thrown))
            throw this.failed(claim, thrown, retry === undefined ? undefined : attempt);
          this.attemptFailed(claim, attempt, thrown, retry.delayMs(attempt));
          // Durable before the backoff: a crash while it waits must not forget this attempt.
          await this.scope.barrier();
          releaseLane?.();
          continue;
        }
        this.scope.interrupt();
        const payload = { index: claim.index, name: claim.name, result: result ?? null };
        let text: string;
        try {
          text = this.encodeResult(claim, payload);
        } catch (refused) {
          // The effect ran but its result cannot be recorded: the step fails, durably, so a
          // replay fails it the same way instead of running the effect again.
          throw this.failed(claim, refused, retry === undefined ? undefined : attempt);
        }
        journal.record(EventType.stepCompleted, payload as JsonValue, text);
        this.completed(claim, text);
        this.settledBesideOthers();
        if (releaseLane !== undefined) {
          // The next interrupted step may crash the process: this completion is durable first.
          await this.scope.barrier();
          releaseLane();
        }
        return recordedValue(payload.result, text, 'result') as T;
      } finally {
        suspension.settleInFlight();
      }
    }
  }

  /**
   * Journals one more interruption of the step's attempt (`step.interrupted`, made durable by the
   * barrier before the effect runs), or, past `stepInterruptionsMax`, fails the step with
   * `STEP_POISONED` without running it.
   */
  private interrupted(claim: Claim, recorded: StepRecord): void {
    const interruptions = (recorded.interruptions ?? 0) + 1;
    const max = this.scope.kernel.settings.stepInterruptionsMax;
    if (interruptions > max) {
      throw this.failed(
        claim,
        new LoomError(
          ErrorCode.STEP_POISONED,
          `step '${claim.name}' of execution ${this.scope.executionId} was interrupted ${max} ` +
            'times in a row (its process died or lost the execution while the effect ran): it is ' +
            'treated as poison and not run again. Fix the step, then runtime.retry(executionId)',
          { executionId: this.scope.executionId, step: claim.name, interruptions: max },
        ),
        // The interrupted attempt counts as made: a retried step's attempts so far, plus it.
        recorded.attempts === undefined ? undefined : recorded.attempts + 1,
      );
    }
    const payload: StepInterruptedPayload = { index: claim.index, name: claim.name, interruptions };
    this.scope.journal.record(EventType.stepInterrupted, payload as never);
    this.scope.state.steps[claim.index] = { ...recorded, interruptions };
  }

  /** The step's retry policy: its own, else the runtime's; undefined for one attempt. */
  private retryOf(options: KernelStepOptions | undefined): ResolvedRetry | undefined {
    const own = options?.retry;
    if (own === false) return undefined;
    if (own === undefined) return this.scope.kernel.settings.stepRetry;
    return resolveRetry(own);
  }

  /** True when another attempt may follow failed attempt `attempt`. */
  private retryable(retry: ResolvedRetry, attempt: number, thrown: unknown): boolean {
    if (attempt >= retry.attempts || this.scope.abort.aborted) return false;
    if (retry.retryable === undefined) return true;
    try {
      return retry.retryable(thrown) === true;
    } catch {
      // A predicate that throws cannot vouch for another attempt: the step fails with its error.
      return false;
    }
  }

  /**
   * Journals that attempt `attempt` (a retry's, or the first after `runtime.retry`) runs now
   * (`step.attempt_started`, made durable by the barrier before the effect), so a crash inside it
   * reads in the log as an attempt in flight, counted like the first attempt's (ADR 0031).
   */
  private attemptStarted(claim: Claim, attempt: number): void {
    const payload: StepAttemptStartedPayload = { index: claim.index, name: claim.name, attempt };
    this.scope.journal.record(EventType.stepAttemptStarted, payload as never);
    const {
      retryAtMs: _due,
      reopened: _reopened,
      ...rest
    } = this.scope.state.steps[claim.index] as StepRecord;
    this.scope.state.steps[claim.index] = rest;
  }

  /** Journals a failed attempt and when the next one runs (`step.attempt_failed`). */
  private attemptFailed(claim: Claim, attempt: number, thrown: unknown, delayMs: number): void {
    const error = recordError(thrown);
    const retryAtMs = this.scope.kernel.clock.now() + delayMs;
    this.scope.journal.record(EventType.stepAttemptFailed, {
      index: claim.index,
      name: claim.name,
      attempt,
      error,
      retryAtMs,
    } as never);
    this.scope.state.steps[claim.index] = {
      name: claim.name,
      status: 'started',
      attempts: attempt,
      retryAtMs,
    };
  }

  /** `ctx.transaction`: the effect and its `step.completed` commit in one store transaction. */
  async transaction<T>(name: string, work: (tx: TransactionHandle) => T | Promise<T>): Promise<T> {
    const { executionId, journal, state, suspension } = this.scope;
    this.scope.ensureOpen('transaction', name);
    if (suspension.suspending) return never();
    const claim = this.scope.claim('step', name);
    if (claim.recorded !== undefined && claim.recorded.status !== 'started')
      return this.replayed<T>(claim.index);
    const { store } = this.scope.kernel;
    if (!isTransactional(store)) {
      throw new LoomError(
        ErrorCode.TRANSACTIONS_UNSUPPORTED,
        `step '${claim.name}' is transactional, but this runtime's store cannot run transactions: use SQLite or Postgres`,
        { executionId },
      );
    }
    suspension.beginInFlight();
    try {
      if (claim.recorded === undefined) {
        journal.record(EventType.stepStarted, {
          index: claim.index,
          name: claim.name,
          transactional: true,
        });
        state.steps[claim.index] = { name: claim.name, status: 'started' };
      }
      await this.scope.barrier();
      // The flow returned while this step (never awaited) waited for its barrier: the execution
      // has ended and nothing could record the effect's outcome, so the effect must not run.
      if (this.scope.ended()) return never();
      let raw: unknown;
      let text = '';
      try {
        raw = await journal.transact(store, work as (tx: unknown) => unknown, (result) => {
          const payload = { index: claim.index, name: claim.name, result: result ?? null };
          // Thrown inside the store's transaction: the work rolls back with it.
          text = this.encodeResult(claim, payload);
          return {
            type: EventType.stepCompleted,
            payload: payload as JsonValue,
            payloadText: text,
          };
        });
      } catch (thrown) {
        if (journal.failure !== undefined) throw this.scope.stopError(journal.failure);
        this.scope.interrupt();
        // The transaction rolled back: record the failure like any step's.
        throw this.failed(claim, thrown);
      }
      this.completed(claim, text);
      return recordedValue(raw ?? null, text, 'result') as T;
    } finally {
      suspension.settleInFlight();
    }
  }

  /** Encodes a `step.completed` payload once; throws `PAYLOAD_NOT_JSON` or `LIMIT_EXCEEDED`. */
  private encodeResult(claim: Claim, payload: { [key: string]: unknown }): string {
    return encodeRecorded(payload, `the result of step '${claim.name}'`, {
      executionId: this.scope.executionId,
      step: claim.name,
      stepIndex: claim.index,
    });
  }

  /**
   * Records the step as failed with what was thrown (and, for a retried step, the attempts it
   * made), and returns the error the flow gets.
   */
  private failed(claim: Claim, thrown: unknown, attempts?: number): LoomError {
    const { executionId, journal, state } = this.scope;
    const error = recordError(thrown);
    const payload: StepFailedPayload = { index: claim.index, name: claim.name, error };
    const record: StepRecord = { name: claim.name, status: 'failed', error };
    if (attempts !== undefined) {
      payload.attempts = attempts;
      record.attempts = attempts;
    }
    journal.record(EventType.stepFailed, payload as never);
    state.steps[claim.index] = record;
    this.settledBesideOthers();
    return stepFailed(executionId, claim.index, claim.name, error, thrown, attempts ?? 1);
  }

  /**
   * A step's outcome recorded while another effect of the execution still runs (parallel steps)
   * goes in this turn's write instead of waiting for the next barrier: a crash inside the other
   * effect must not cost an outcome that had returned, which would run its effect again (for an
   * agent's tool, ask a person about a call that had finished). The flow gets the result without
   * waiting for the write: the journal appends in order, so any later barrier covers it. A lone
   * step's outcome still waits for the next barrier, so a sequential flow keeps its n + 1 appends
   * (ADR 0045).
   */
  private settledBesideOthers(): void {
    if (this.scope.suspension.othersInFlight) this.scope.durableSoon();
  }

  private completed(claim: Claim, text: string): void {
    // The hot state keeps results only for snapshots: decoded, so the flow cannot change them.
    this.scope.state.steps[claim.index] = this.scope.kernel.settings.keepResults
      ? {
          name: claim.name,
          status: 'completed',
          result: (decodePayload(text) as { result: JsonValue }).result,
        }
      : { name: claim.name, status: 'completed' };
  }

  private effectContext(index: number, name: string, attempt: number): StepEffectContext {
    const { executionId, abort } = this.scope;
    return {
      executionId,
      stepIndex: index,
      stepName: name,
      idempotencyKey: `${executionId}/${index}`,
      attempt,
      // A getter: the execution's AbortSignal is made only for an effect that reads it.
      get signal() {
        return abort.signal;
      },
      clock: this.scope.kernel.clock,
    };
  }

  private replayed<T>(index: number): T {
    const recorded = this.scope.state.steps[index];
    if (recorded?.status === 'failed') {
      throw stepFailed(
        this.scope.executionId,
        index,
        recorded.name,
        recorded.error,
        undefined,
        recorded.attempts ?? 1,
      );
    }
    return replayedValue(recorded?.result, this.scope.kernel.settings.keepResults) as T;
  }
}
