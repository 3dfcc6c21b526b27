import type { CancelTimer, Clock } from '../../clock.js';

/**
 * First wait before waking the global watchers again after a readAll left committed rows held
 * back behind an open transaction (read-all-statement.ts): most such transactions are short.
 */
export const heldBackWakeMs = 25;

/**
 * The longest wait between two such wake-ups (the wait doubles from {@link heldBackWakeMs}): a
 * transaction open for minutes costs each global subscription one read a second, as the default
 * poll would, and the rows it held back arrive at most this long after it ends.
 */
export const heldBackWakeMsMax = 1_000;

/**
 * Re-wakes a store's global watchers while their reads find rows held back. readAll returns only
 * rows older than every open transaction, so a row whose notification arrives while another
 * transaction is open (anyone's, anywhere on the server) is not in the read that notification
 * caused, and no later notification announces it: without this, a subscription that does not
 * poll would never see it. One wake-up is armed at a time; the reads it causes re-arm it, the
 * wait doubling up to {@link heldBackWakeMsMax}, until a read finds nothing held back.
 */
export class HeldBackWake {
  private cancel: CancelTimer | undefined;
  private waitMs = heldBackWakeMs;
  private closed = false;

  /** `watched` says whether anyone watches globally; `wake` wakes them all. */
  constructor(
    private readonly clock: Clock,
    private readonly watched: () => boolean,
    private readonly wake: () => void,
  ) {}

  /** A readAll ran and found rows held back (true) or none (false). */
  readAll(heldBack: boolean): void {
    if (!heldBack) {
      // Caught up: a later transaction held open starts from the short wait again.
      if (this.cancel === undefined) this.waitMs = heldBackWakeMs;
      return;
    }
    if (this.closed || this.cancel !== undefined || !this.watched()) return;
    const waitMs = this.waitMs;
    this.waitMs = Math.min(heldBackWakeMsMax, waitMs * 2);
    this.cancel = this.clock.setTimer(() => {
      this.cancel = undefined;
      this.wake();
    }, waitMs);
  }

  /** Cancels the wake-up armed, if any; none is armed after. */
  close(): void {
    this.closed = true;
    this.cancel?.();
    this.cancel = undefined;
  }
}
