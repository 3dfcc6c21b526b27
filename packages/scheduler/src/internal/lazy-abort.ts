/** Aborts `target`'s signal (now if it exists, on first read otherwise); later calls do nothing. */
export let abortLazy: (target: LazyAbort, reason: unknown) => void;

/**
 * A `{ signal }` whose AbortSignal is made only when someone reads it. On Node 20 creating an
 * AbortController costs ~5 µs and slows the code around it (its signal is built with a
 * prototype swap), more than a `Promise.all` over 10 quick items; a fan-out whose calls never
 * read the signal should not pay for one. Aborting before the first read is remembered: a
 * signal made afterwards is born aborted with the same reason.
 *
 * The instance is handed to user code as is, so `abort` is not a method but the module
 * function {@link abortLazy}, which alone can reach the private state.
 */
export class LazyAbort {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  static {
    abortLazy = (target, reason) => {
      if (target.#aborted) return;
      target.#aborted = true;
      target.#reason = reason;
      target.#controller?.abort(reason);
    };
  }
}
