import type { Clock } from '../clock.js';
import { waitKindBits } from '../wait-kinds.js';
import type { CommandSink, ExecutionMachine } from './core/execution-machine.js';
import { never } from './driver-support.js';

/**
 * Runs a driver's suspension: the machine counts what is in flight and what is blocked and decides
 * (see {@link ExecutionMachine.endOfTurn}); this schedules that decision after the current turn,
 * carries out the records it queues and resolves `suspended` with the earliest wake time.
 */
export class Suspension {
  /** Resolves with the earliest wake time (null: only a signal or a child wakes it). */
  readonly suspended: Promise<number | null>;
  private resolveSuspend!: (wakeAtMs: number | null) => void;
  private suspendCheckScheduled = false;

  constructor(
    private readonly machine: ExecutionMachine,
    /** What carries out the machine's commands (the driver). */
    private readonly sink: CommandSink,
    /** The runtime's clock: defers the check to the end of the turn. */
    private readonly clock: Clock,
  ) {
    this.suspended = new Promise((resolve) => {
      this.resolveSuspend = resolve;
    });
  }

  /** True once the suspension is recorded: operations the flow asks for after it never settle. */
  get suspending(): boolean {
    return this.machine.suspending;
  }

  /** An effect, inline wait or lookup starts; pair with `settleInFlight` in a `finally`. */
  beginInFlight(): void {
    this.machine.beginInFlight();
  }

  /**
   * True when an effect, inline wait or lookup other than the caller's own is in flight (the
   * caller counts as one: ask from inside a `beginInFlight` … `settleInFlight` pair).
   */
  get othersInFlight(): boolean {
    return this.machine.othersInFlight;
  }

  /** The effect, inline wait or lookup ended: the execution may suspend now. */
  settleInFlight(): void {
    if (this.machine.settleInFlight()) this.scheduleSuspendCheck();
  }

  /**
   * The flow cannot progress past this wait now; the execution suspends when nothing else runs.
   * `signalsSeen`: for a wait a signal ends (a signal or a child's end), the newest inbox signal
   * id it had read when it found nothing. `kind`: what else than its wake time it waits for (a bit
   * of `waitKindBits`; 0 for a timer alone), for the index (ADR 0062): a wake time adds `timer`.
   */
  block<T>(wakeAtMs: number | null, signalsSeen?: number, kind = 0): Promise<T> {
    const kinds = wakeAtMs === null ? kind : kind | waitKindBits.timer;
    if (this.machine.block(wakeAtMs, signalsSeen, kinds)) this.scheduleSuspendCheck();
    return never();
  }

  /** The machine said the execution may suspend now: it decides at the end of this turn. */
  scheduleSuspendCheck(): void {
    if (this.suspendCheckScheduled) return;
    this.suspendCheckScheduled = true;
    // After this turn: a branch that is about to start another effect gets to claim it first.
    this.clock.defer(() => {
      this.suspendCheckScheduled = false;
      if (!this.machine.endOfTurn()) return;
      this.machine.drain(this.sink);
      this.resolveSuspend(this.machine.wakeAtMs);
    });
  }
}
