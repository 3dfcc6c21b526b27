import type { JsonValue } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { isTransactional } from '../event-store.js';
import { decodePayload } from '../internal/json-codec.js';
import type { Claim, DriverScope } from './driver-scope.js';
import {
  encodeRecorded,
  never,
  recordedValue,
  replayedValue,
  stepFailed,
} from './driver-support.js';
import type { KernelStepOptions, StepEffectContext, TransactionHandle } from './flow.js';
import { EventType } from './kernel-events.js';
import { recordError } from './recorded-error.js';

/**
 * `ctx.step` and `ctx.transaction`: run an effect behind a durability barrier once, record its
 * result or failure, and return the recorded one on replay.
 */
export class StepOperations {
  constructor(private readonly scope: DriverScope) {}

  /** `ctx.step`: the effect runs once, after its `step.started` is durable. */
  async step<T>(
    name: string,
    fn: (effect: StepEffectContext) => T | Promise<T>,
    options: KernelStepOptions | undefined,
  ): Promise<T> {
    const { executionId, journal, state, suspension } = this.scope;
    this.scope.ensureOpen('step', name);
    if (suspension.suspending) return never();
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
    suspension.beginInFlight();
    try {
      if (claim.recorded === undefined) {
        const payload: JsonValue =
          options?.idempotent === true
            ? { index: claim.index, name: claim.name, idempotent: true }
            : { index: claim.index, name: claim.name };
        journal.record(EventType.stepStarted, payload);
        state.steps[claim.index] = { name: claim.name, status: 'started' };
      }
      await this.scope.barrier();
      // The flow returned while this step (never awaited) waited for its barrier: the execution
      // has ended and nothing could record the effect's outcome, so the effect must not run.
      if (this.scope.ended()) return never();
      let result: T;
      try {
        result = await fn(this.effectContext(claim.index, claim.name));
      } catch (thrown) {
        this.scope.interrupt();
        throw this.failed(claim, thrown);
      }
      this.scope.interrupt();
      const payload = { index: claim.index, name: claim.name, result: result ?? null };
      let text: string;
      try {
        text = this.encodeResult(claim, payload);
      } catch (refused) {
        // The effect ran but its result cannot be recorded: the step fails, durably, so a
        // replay fails it the same way instead of running the effect again.
        throw this.failed(claim, refused);
      }
      journal.record(EventType.stepCompleted, payload as JsonValue, text);
      this.completed(claim, text);
      return recordedValue(payload.result, text, 'result') as T;
    } finally {
      suspension.settleInFlight();
    }
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

  /** Records the step as failed with what was thrown, and returns the error the flow gets. */
  private failed(claim: Claim, thrown: unknown): LoomError {
    const { executionId, journal, state } = this.scope;
    const error = recordError(thrown);
    journal.record(EventType.stepFailed, {
      index: claim.index,
      name: claim.name,
      error,
    } as never);
    state.steps[claim.index] = { name: claim.name, status: 'failed', error };
    return stepFailed(executionId, claim.index, claim.name, error, thrown);
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

  private effectContext(index: number, name: string): StepEffectContext {
    const { executionId } = this.scope;
    return {
      executionId,
      stepIndex: index,
      stepName: name,
      idempotencyKey: `${executionId}/${index}`,
      signal: this.scope.signal,
      clock: this.scope.kernel.clock,
    };
  }

  private replayed<T>(index: number): T {
    const recorded = this.scope.state.steps[index];
    if (recorded?.status === 'failed')
      throw stepFailed(this.scope.executionId, index, recorded.name, recorded.error);
    return replayedValue(recorded?.result, this.scope.kernel.settings.keepResults) as T;
  }
}
