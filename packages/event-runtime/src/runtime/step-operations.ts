import type { JsonValue } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { isTransactional } from '../event-store.js';
import { decodePayload, encodePayload } from '../internal/json-codec.js';
import type { DriverScope } from './driver-scope.js';
import { never, stepFailed, toJson } from './driver-support.js';
import type { EffectContext, StepOptions, TransactionHandle } from './flow.js';
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
    fn: (effect: EffectContext) => T | Promise<T>,
    options: StepOptions | undefined,
  ): Promise<T> {
    const { executionId, journal, state, suspension } = this.scope;
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
      let result: T;
      try {
        result = await fn(this.effectContext(claim.index, claim.name));
      } catch (thrown) {
        this.scope.interrupt();
        const error = recordError(thrown);
        journal.record(EventType.stepFailed, {
          index: claim.index,
          name: claim.name,
          error,
        } as never);
        state.steps[claim.index] = { name: claim.name, status: 'failed', error };
        throw stepFailed(executionId, claim.index, claim.name, error, thrown);
      }
      this.scope.interrupt();
      const value = toJson(result, `the result of step '${claim.name}'`, executionId);
      journal.record(EventType.stepCompleted, {
        index: claim.index,
        name: claim.name,
        result: value,
      });
      const kept = this.keep(value);
      state.steps[claim.index] =
        kept === undefined
          ? { name: claim.name, status: 'completed' }
          : { name: claim.name, status: 'completed', result: kept };
      return result;
    } finally {
      suspension.settleInFlight();
    }
  }

  /** `ctx.transaction`: the effect and its `step.completed` commit in one store transaction. */
  async transaction<T>(name: string, work: (tx: TransactionHandle) => T | Promise<T>): Promise<T> {
    const { executionId, journal, state, suspension } = this.scope;
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
      let value: JsonValue;
      try {
        value = (await journal.transact(store, work as (tx: unknown) => unknown, (result) => ({
          type: EventType.stepCompleted,
          payload: {
            index: claim.index,
            name: claim.name,
            result: toJson(result, `the result of step '${claim.name}'`, executionId),
          },
        }))) as JsonValue;
      } catch (thrown) {
        if (journal.failure !== undefined) throw this.scope.stopError(journal.failure);
        this.scope.interrupt();
        // The transaction rolled back: record the failure like any step's.
        const error = recordError(thrown);
        journal.record(EventType.stepFailed, {
          index: claim.index,
          name: claim.name,
          error,
        } as never);
        state.steps[claim.index] = { name: claim.name, status: 'failed', error };
        throw stepFailed(executionId, claim.index, claim.name, error, thrown);
      }
      const kept = this.keep(value);
      state.steps[claim.index] =
        kept === undefined
          ? { name: claim.name, status: 'completed' }
          : { name: claim.name, status: 'completed', result: kept };
      return value as T;
    } finally {
      suspension.settleInFlight();
    }
  }

  private effectContext(index: number, name: string): EffectContext {
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
    return recorded?.result as T;
  }

  private keep(value: JsonValue): JsonValue | undefined {
    return this.scope.kernel.settings.keepResults ? decodePayload(encodePayload(value)) : undefined;
  }
}
