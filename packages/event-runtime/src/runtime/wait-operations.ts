import type { StoredSignal } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { waitKindBits } from '../wait-kinds.js';
import { WaitDecision } from './core/execution-machine.js';
import {
  replaySignal,
  SignalInbox,
  type SignalWait,
  signalOutcome,
  signalTimeoutAt,
  timerDue,
  timerFired,
} from './core/wait-records.js';
import type { DriverScope } from './driver-scope.js';
import { never } from './driver-support.js';
import type { SignalWaitKind } from './flow.js';
import { isTransientStoreError } from './store-retry.js';

/** The index bit of each kind a signal wait may carry (ADR 0062). */
const signalKindBits: Readonly<Record<string, number | undefined>> = {
  signal: waitKindBits.signal,
  approval: waitKindBits.approval,
  question: waitKindBits.question,
};

/**
 * `ctx.sleep`, `ctx.sleepUntil` and `ctx.waitForSignal`: durable waits. The machine decides what
 * they record (`wait-records.ts`); this reads the inbox and runs a short wait in memory. A wait
 * that cannot progress now blocks, and the execution suspends when nothing else runs.
 */
export class WaitOperations {
  private readonly inbox: SignalInbox;

  constructor(private readonly scope: DriverScope) {
    this.inbox = new SignalInbox(scope.state.consumedSignals);
  }

  /** `ctx.sleep` (`ms` from now) and `ctx.sleepUntil` (`atMs`): a durable timer. */
  async sleepUntil(
    atMs: number | undefined,
    ms: number | undefined,
    name = 'sleep',
  ): Promise<void> {
    const { machine } = this.scope;
    this.scope.ensureOpen(atMs === undefined ? 'sleep' : 'sleepUntil', name);
    if (machine.suspending) return never();
    const claim = machine.claim('timer', name);
    if (claim.recorded?.status === 'completed') return;
    const wakeAtMs = timerDue(machine, claim, atMs, ms, this.scope.kernel.clock.now());
    this.scope.carryOut();
    await this.waitUntilDue(claim.index, wakeAtMs);
    this.scope.interrupt();
    timerFired(machine, claim);
    this.scope.carryOut();
  }

  /**
   * `ctx.waitForSignal`: the next unconsumed inbox signal named `name`, or a timeout. `kind`: what
   * the index says the execution waits for while this wait blocks (default `signal`).
   */
  async waitForSignal(
    name: string,
    timeoutMs: number | undefined,
    kind: SignalWaitKind = 'signal',
  ): Promise<SignalWait> {
    const { machine, suspension } = this.scope;
    const { clock } = this.scope.kernel;
    this.scope.ensureOpen('waitForSignal', name);
    const kindBit = signalKindBits[kind];
    if (kindBit === undefined) {
      throw new LoomError(
        ErrorCode.INVALID_ARGUMENT,
        `waitForSignal('${name}') got kind ${JSON.stringify(kind)}: a signal wait's kind is signal, approval or question`,
        { executionId: this.scope.executionId, path: 'kind' },
      );
    }
    if (machine.suspending) return never();
    const claim = machine.claim('signal', name);
    if (claim.recorded?.status === 'completed') return replaySignal(machine, claim);
    const timeoutAtMs = signalTimeoutAt(machine, claim, timeoutMs, clock.now());
    this.scope.carryOut();
    if (this.inbox.find(claim.name) === undefined) {
      suspension.beginInFlight();
      try {
        await this.readInbox();
      } finally {
        suspension.settleInFlight();
      }
    }
    this.scope.interrupt();
    let outcome: SignalWait | undefined;
    try {
      outcome = signalOutcome(machine, this.inbox, claim, timeoutAtMs, clock.now());
    } finally {
      this.scope.carryOut();
    }
    if (outcome !== undefined) return outcome;
    return suspension.block(timeoutAtMs, this.inbox.newestSeen, kindBit);
  }

  /**
   * Returns once `wakeAtMs` has passed for operation `op`: at once, after a short in-memory wait
   * (the machine's `armTimer`, answered by the node's timer), or never (the execution suspends).
   */
  async waitUntilDue(op: number, wakeAtMs: number): Promise<void> {
    const { machine, suspension } = this.scope;
    const { clock } = this.scope.kernel;
    const decision = machine.waitUntil(op, wakeAtMs, clock.now());
    if (decision === WaitDecision.due) return;
    if (decision === WaitDecision.armed) {
      const fired = this.scope.awaitCompletion(op);
      this.scope.carryOut();
      await fired;
      if (clock.now() >= wakeAtMs) return;
    }
    return suspension.block(wakeAtMs);
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
        afterSignalId: this.inbox.newestSeen,
      });
    } catch (error) {
      // A transient store failure is not the flow's to see: this node stops driving and resumes
      // the execution from the log after a backoff, as after a failed append (ADR 0010). Thrown
      // into the flow, it failed the execution (found by the simulator, tools/dst).
      throw isTransientStoreError(error) ? this.scope.stopError(error) : error;
    }
    this.inbox.add(fresh);
    return this.inbox.read;
  }
}
