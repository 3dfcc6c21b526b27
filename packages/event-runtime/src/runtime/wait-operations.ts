import { ErrorCode, LoomError } from '../errors.js';
import { waitKindBits } from '../wait-kinds.js';
import { WaitDecision } from './core/execution-machine.js';
import {
  replaySignal,
  type SignalWait,
  signalOutcome,
  signalTimeoutAt,
  timerDue,
  timerFired,
} from './core/wait-records.js';
import type { DriverScope } from './driver-scope.js';
import { never } from './driver-support.js';
import type { SignalWaitKind } from './flow.js';

/** The index bit of each kind a signal wait may carry (ADR 0062). */
const signalKindBits: Readonly<Record<string, number | undefined>> = {
  signal: waitKindBits.signal,
  approval: waitKindBits.approval,
  question: waitKindBits.question,
};

/**
 * `ctx.sleep`, `ctx.sleepUntil` and `ctx.waitForSignal`: durable waits. The machine decides what
 * they record (`wait-records.ts`) and keeps the inbox's signals; this waits for its commands'
 * answers (an inbox read, a short wait in memory). A wait that cannot progress now blocks, and
 * the execution suspends when nothing else runs.
 */
export class WaitOperations {
  constructor(private readonly scope: DriverScope) {}

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
    if (machine.inbox.find(claim.name) === undefined) await this.scope.awaitInbox(claim.index);
    this.scope.interrupt();
    let outcome: SignalWait | undefined;
    try {
      outcome = signalOutcome(machine, claim, timeoutAtMs, clock.now());
    } finally {
      this.scope.carryOut();
    }
    if (outcome !== undefined) return outcome;
    return suspension.block(timeoutAtMs, machine.inbox.newestSeen, kindBit);
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
}
