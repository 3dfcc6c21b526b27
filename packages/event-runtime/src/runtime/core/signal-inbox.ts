// The signals an execution has read from its inbox this run, and those its waits took. The
// execution's machine owns one (made on its first signal or child wait), so what was consumed has
// one keeper: the machine takes a signal (`signal.received`) and no other wait of this run, nor a
// replay of the log, gets it again.
import type { StoredSignal } from '../../envelope.js';

/** The signals an execution's machine has read from its inbox, and those its waits consumed. */
export class SignalInbox {
  private readonly signals: StoredSignal[] = [];
  private readonly consumed: Set<number>;

  /** `consumed`: the signals the log says were taken already (the state's `consumedSignals`). */
  constructor(consumed: readonly number[]) {
    this.consumed = new Set(consumed);
  }

  /** Every signal read so far, oldest first. */
  get read(): readonly StoredSignal[] {
    return this.signals;
  }

  /** The newest signal id read (0: none): where the next read starts, and a suspension's guard. */
  get newestSeen(): number {
    return this.signals[this.signals.length - 1]?.signalId ?? 0;
  }

  /** Adds what a read returned (signals already read are skipped). */
  add(fresh: readonly StoredSignal[]): void {
    const newest = this.newestSeen;
    for (const signal of fresh) if (signal.signalId > newest) this.signals.push(signal);
  }

  /** The first signal named `name` no wait has taken, if one was read. */
  find(name: string): StoredSignal | undefined {
    return this.signals.find(
      (signal) => signal.name === name && !this.consumed.has(signal.signalId),
    );
  }

  /** Marks `signalId` taken: no other wait gets it. */
  consume(signalId: number): void {
    this.consumed.add(signalId);
  }
}
