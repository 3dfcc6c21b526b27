import type { Clock } from '../clock.js';

/**
 * How long one interrupted step holds the lane before the next may start beside it: the lane
 * isolates a step that crashes its process (which does so quickly), and must not let one whose
 * effect hangs hold every other interrupted step of this node back for good.
 */
export const suspectLaneHoldMaxMs = 5_000;

/**
 * The node's one lane for interrupted steps (ADR 0031): a step whose attempt a resume found in
 * flight runs its effect again only with the lane, one at a time, and counts the interruption
 * (`step.interrupted`) only once it holds it. A poison step that crashes the process is then the
 * only step counted for that crash, instead of every step that happened to be in flight beside
 * it; they wait their turn, uncounted, and run alone.
 */
export class SuspectLane {
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly clock: Clock) {}

  /** Waits for the lane; call the returned function when the effect settled (again: no-op). */
  async acquire(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const before = this.tail;
    this.tail = before.then(() => held);
    await before;
    const cancel = this.clock.setTimer(release, suspectLaneHoldMaxMs);
    return () => {
      cancel();
      release();
    };
  }
}
