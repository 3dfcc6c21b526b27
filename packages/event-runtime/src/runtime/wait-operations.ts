import type { JsonValue, StoredSignal } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { decodePayload } from '../internal/json-codec.js';
import type { StepRecord } from './core/execution-state.js';
import { EventType } from './core/kernel-events.js';
import { encodeRecorded, recordedValue, replayedValue } from './core/recorded-values.js';
import type { DriverScope } from './driver-scope.js';
import { never } from './driver-support.js';
import type { SignalWait } from './flow.js';
import { isTransientStoreError } from './store-retry.js';

/**
 * `ctx.sleep`, `ctx.sleepUntil` and `ctx.waitForSignal`: durable waits. A short wait runs in
 * memory; a wait that cannot progress now blocks, and the execution suspends when nothing
 * else runs.
 */
export class WaitOperations {
  private inbox: StoredSignal[] = [];
  private readonly consumed: Set<number>;

  constructor(private readonly scope: DriverScope) {
    this.consumed = new Set(scope.state.consumedSignals);
  }

  /** `ctx.sleep` (`ms` from now) and `ctx.sleepUntil` (`atMs`): a durable timer. */
  async sleepUntil(
    atMs: number | undefined,
    ms: number | undefined,
    name = 'sleep',
  ): Promise<void> {
    const { executionId, journal, state } = this.scope;
    this.scope.ensureOpen(atMs === undefined ? 'sleep' : 'sleepUntil', name);
    if (this.scope.suspension.suspending) return never();
    const claim = this.scope.claim('timer', name);
    if (claim.recorded?.status === 'completed') return;
    let wakeAtMs = claim.recorded?.wakeAtMs ?? undefined;
    if (wakeAtMs === undefined || wakeAtMs === null) {
      const nowMs = this.scope.kernel.clock.now();
      wakeAtMs =
        atMs === undefined
          ? nowMs + checkDuration(ms, executionId)
          : checkInstant(atMs, nowMs, executionId);
      journal.record(EventType.timerScheduled, {
        index: claim.index,
        name: claim.name,
        wakeAtMs,
      });
      state.steps[claim.index] = {
        kind: 'timer',
        name: claim.name,
        status: 'started',
        wakeAtMs,
      };
    }
    await this.waitUntilDue(wakeAtMs);
    this.scope.interrupt();
    journal.record(EventType.timerFired, { index: claim.index, name: claim.name });
    const record = state.steps[claim.index];
    if (record !== undefined) record.status = 'completed';
  }

  /** `ctx.waitForSignal`: the next unconsumed inbox signal named `name`, or a timeout. */
  async waitForSignal(name: string, timeoutMs: number | undefined): Promise<SignalWait> {
    const { executionId, journal, state } = this.scope;
    const { clock, settings } = this.scope.kernel;
    this.scope.ensureOpen('waitForSignal', name);
    if (this.scope.suspension.suspending) return never();
    const claim = this.scope.claim('signal', name);
    if (claim.recorded?.status === 'completed') {
      return claim.recorded.signalId === undefined
        ? { received: false }
        : {
            received: true,
            payload: replayedValue(claim.recorded.result, settings.keepResults),
            signalId: claim.recorded.signalId,
          };
    }
    let timeoutAtMs = claim.recorded?.wakeAtMs ?? null;
    if (claim.recorded === undefined) {
      timeoutAtMs =
        timeoutMs === undefined ? null : clock.now() + checkDuration(timeoutMs, executionId);
      journal.record(EventType.signalWaiting, {
        index: claim.index,
        name: claim.name,
        timeoutAtMs,
      });
      state.steps[claim.index] = {
        kind: 'signal',
        name: claim.name,
        status: 'started',
        wakeAtMs: timeoutAtMs,
      };
    }
    const { signal, late, signalsSeen } = await this.takeSignal(claim.name, timeoutAtMs);
    this.scope.interrupt();
    const record = state.steps[claim.index] as StepRecord;
    if (signal !== undefined) {
      const payload = {
        index: claim.index,
        name: claim.name,
        signalId: signal.signalId,
        payload: signal.payload,
      };
      // A signal the inbox took can still be too big for this event (its fields count): the wait
      // fails with LIMIT_EXCEEDED, recording nothing, and fails the same way on replay.
      const text = encodeRecorded(payload, `signal ${signal.signalId} ('${claim.name}')`, {
        executionId,
        signalId: signal.signalId,
      });
      journal.record(EventType.signalReceived, payload, text);
      const value = recordedValue(signal.payload, text, 'payload');
      state.consumedSignals.push(signal.signalId);
      record.status = 'completed';
      record.signalId = signal.signalId;
      // A separate copy for the hot state (snapshots), so the flow cannot change it.
      record.result = settings.keepResults
        ? (decodePayload(text) as { payload: JsonValue }).payload
        : value;
      return { received: true, payload: value, signalId: signal.signalId };
    }
    // A signal that arrived at or after the deadline proves the deadline passed, whatever this
    // node's clock says: the timeout wins (ADR 0042), recorded with the signal it beat.
    if (late !== undefined || (timeoutAtMs !== null && clock.now() >= timeoutAtMs)) {
      journal.record(EventType.signalTimedOut, {
        index: claim.index,
        name: claim.name,
        ...(late === undefined ? {} : { lateSignalId: late.signalId }),
      });
      record.status = 'completed';
      return { received: false };
    }
    return this.scope.suspension.block(timeoutAtMs, signalsSeen);
  }

  /** Returns once `wakeAtMs` has passed: at once, after a short in-memory wait, or never (suspend). */
  async waitUntilDue(wakeAtMs: number): Promise<void> {
    const { suspension } = this.scope;
    const { clock, settings } = this.scope.kernel;
    const remainingMs = wakeAtMs - clock.now();
    if (remainingMs <= 0) return;
    if (remainingMs <= settings.inlineWaitMs) {
      suspension.beginInFlight();
      try {
        await new Promise<void>((resolve) => {
          clock.setTimer(resolve, remainingMs, { keepAlive: true });
        });
      } finally {
        suspension.settleInFlight();
      }
      if (clock.now() >= wakeAtMs) return;
    }
    return suspension.block(wakeAtMs);
  }

  /**
   * The first unconsumed inbox signal named `name`, consumed now (so parallel waits never share
   * one), and the newest inbox id looked through (a suspension's signal guard, ADR 0033). A
   * signal whose arrival (`at`, stamped by the store) is at or after `deadlineAtMs` is not taken:
   * it comes back as `late` and stays in the inbox for a later wait of its name (ADR 0042).
   */
  private async takeSignal(
    name: string,
    deadlineAtMs: number | null,
  ): Promise<{
    signal: StoredSignal | undefined;
    late: StoredSignal | undefined;
    signalsSeen: number;
  }> {
    const pick = () =>
      this.inbox.find((signal) => signal.name === name && !this.consumed.has(signal.signalId));
    let found = pick();
    if (found === undefined) {
      this.scope.suspension.beginInFlight();
      try {
        await this.readInbox();
      } finally {
        this.scope.suspension.settleInFlight();
      }
      found = pick();
    }
    const signalsSeen = this.newestSeen();
    if (found !== undefined && deadlineAtMs !== null && found.at >= deadlineAtMs) {
      return { signal: undefined, late: found, signalsSeen };
    }
    if (found !== undefined) this.consumed.add(found.signalId);
    return { signal: found, late: undefined, signalsSeen };
  }

  /**
   * Reads the signals that came since the last look; returns every signal read so far, oldest
   * first. A child wait about to block reads it for its suspension's guard (the child's end comes
   * as a newer signal; ADR 0033). The caller counts it as in flight.
   */
  async readInbox(): Promise<readonly StoredSignal[]> {
    let fresh: StoredSignal[];
    try {
      fresh = await this.scope.kernel.store.readSignals(this.scope.executionId, {
        afterSignalId: this.newestSeen(),
      });
    } catch (error) {
      // A transient store failure is not the flow's to see: this node stops driving and resumes
      // the execution from the log after a backoff, as after a failed append (ADR 0010). Thrown
      // into the flow, it failed the execution (found by the simulator, tools/dst).
      throw isTransientStoreError(error) ? this.scope.stopError(error) : error;
    }
    this.inbox.push(...fresh.filter((signal) => signal.signalId > this.newestSeen()));
    return this.inbox;
  }

  /** The newest inbox signal id this driver has read (0: none). */
  private newestSeen(): number {
    return this.inbox[this.inbox.length - 1]?.signalId ?? 0;
  }
}

/** The longest durable wait: 100 years, in milliseconds. */
const durationMaxMs = 100 * 365 * 24 * 3_600_000;

function invalidTime(what: string, value: unknown, executionId: string): never {
  throw new LoomError(
    ErrorCode.INVALID_ARGUMENT,
    `${what} must be a non-negative integer of milliseconds at most 100 years ahead, got ${String(value)}`,
    { executionId, actual: value },
  );
}

/** A duration in ms: a non-negative safe integer of at most 100 years. Throws `INVALID_ARGUMENT`. */
function checkDuration(ms: unknown, executionId: string): number {
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0 || ms > durationMaxMs) {
    invalidTime('a duration', ms, executionId);
  }
  return ms;
}

/**
 * An instant (epoch ms) at most 100 years after `nowMs`, which is the runtime's clock: judged by
 * the wall clock, a simulated or skewed clock would refuse good instants or accept bad ones.
 */
function checkInstant(atMs: unknown, nowMs: number, executionId: string): number {
  if (
    typeof atMs !== 'number' ||
    !Number.isSafeInteger(atMs) ||
    atMs < 0 ||
    atMs > nowMs + durationMaxMs
  ) {
    invalidTime('an instant', atMs, executionId);
  }
  return atMs;
}
