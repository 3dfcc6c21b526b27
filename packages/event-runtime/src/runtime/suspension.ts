import { EventType } from './core/kernel-events.js';
import { never } from './driver-support.js';
import type { ExecutionJournal } from './execution-journal.js';

/**
 * Decides when a driver's execution suspends: once some wait is blocked (it cannot progress
 * before a timer or a signal) and no effect, inline wait or lookup is in flight, it records
 * `execution.suspended` with the earliest wake time and resolves `suspended`.
 */
export class Suspension {
  /** Resolves with the earliest wake time (null: only a signal or a child wakes it). */
  readonly suspended: Promise<number | null>;
  private resolveSuspend!: (wakeAtMs: number | null) => void;
  /** Effects, inline waits and lookups in progress: while any runs, the execution cannot suspend. */
  private inFlight = 0;
  private blockedWaits = 0;
  private earliestWakeAtMs: number | null = null;
  /**
   * The fewest inbox signals a blocked signal or child wait had seen (the newest id it read):
   * the suspension's guard, so the store makes it due at once if a newer signal came meanwhile
   * (ADR 0033). Undefined while only timers block.
   */
  private signalsSeen: number | undefined;
  private suspendCheckScheduled = false;
  private suspendingNow = false;

  constructor(
    private readonly journal: ExecutionJournal,
    /** True once the driver was stopped or cancelled: it ends rather than suspends. */
    private readonly ending: () => boolean,
  ) {
    this.suspended = new Promise((resolve) => {
      this.resolveSuspend = resolve;
    });
  }

  /** True once the suspension is recorded: operations the flow asks for after it never settle. */
  get suspending(): boolean {
    return this.suspendingNow;
  }

  /** An effect, inline wait or lookup starts; pair with `settleInFlight` in a `finally`. */
  beginInFlight(): void {
    this.inFlight++;
  }

  /**
   * True when an effect, inline wait or lookup other than the caller's own is in flight (the
   * caller counts as one: ask from inside a `beginInFlight` … `settleInFlight` pair).
   */
  get othersInFlight(): boolean {
    return this.inFlight > 1;
  }

  /** The effect, inline wait or lookup ended: the execution may suspend now. */
  settleInFlight(): void {
    this.inFlight--;
    this.scheduleSuspendCheck();
  }

  /**
   * The flow cannot progress past this wait now; the execution suspends when nothing else runs.
   * `signalsSeen`: for a wait a signal ends (a signal or a child's end), the newest inbox signal
   * id it had read when it found nothing.
   */
  block<T>(wakeAtMs: number | null, signalsSeen?: number): Promise<T> {
    this.blockedWaits++;
    if (signalsSeen !== undefined) {
      this.signalsSeen = Math.min(signalsSeen, this.signalsSeen ?? signalsSeen);
    }
    if (wakeAtMs !== null && (this.earliestWakeAtMs === null || wakeAtMs < this.earliestWakeAtMs)) {
      this.earliestWakeAtMs = wakeAtMs;
    }
    this.scheduleSuspendCheck();
    return never();
  }

  private scheduleSuspendCheck(): void {
    if (this.blockedWaits === 0 || this.inFlight > 0 || this.suspendCheckScheduled) return;
    this.suspendCheckScheduled = true;
    // After this turn: a branch that is about to start another effect gets to claim it first.
    this.journal.clock.defer(() => {
      this.suspendCheckScheduled = false;
      if (this.blockedWaits === 0 || this.inFlight > 0 || this.suspendingNow) return;
      if (this.ending()) return;
      this.suspendingNow = true;
      this.journal.record(EventType.executionSuspended, { wakeAtMs: this.earliestWakeAtMs });
      this.journal.setStatus('suspended', this.earliestWakeAtMs, this.signalsSeen);
      this.resolveSuspend(this.earliestWakeAtMs);
    });
  }
}
