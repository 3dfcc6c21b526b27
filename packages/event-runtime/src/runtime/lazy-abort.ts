/**
 * An execution's abort, with its `AbortSignal` made only when something asks for it: an
 * `AbortController` costs ~5 µs on Node 20 (most of it `createAbortSignal`), more than the rest
 * of a step's bookkeeping, and most effects never read `signal`. Aborting before anyone asked
 * keeps the reason; the signal made later is already aborted with it (`AbortSignal.abort`), so
 * a reader cannot tell the difference.
 */
export class LazyAbort {
  private controller: AbortController | undefined;
  private abortedWith: { reason: unknown } | undefined;

  /** The execution's signal (made now if nobody asked before). */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.abortedWith !== undefined) this.controller.abort(this.abortedWith.reason);
    }
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.abortedWith !== undefined;
  }

  /** Why it was aborted (undefined until it was). */
  get reason(): unknown {
    return this.abortedWith?.reason;
  }

  /** Aborts once; later calls do nothing, as `AbortController.abort` does. */
  abort(reason: unknown): void {
    if (this.abortedWith !== undefined) return;
    this.abortedWith = { reason };
    this.controller?.abort(reason);
  }
}
