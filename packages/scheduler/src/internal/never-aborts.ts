// The signal a task gets when its caller passed none. Creating an AbortController costs
// ~5 µs on Node 20 (the signal is built with a prototype swap that V8 cannot optimise), which
// is 40× a direct `await`; one shared, never-aborting signal keeps the uncapped path free (P16).
// Its controller is private and never aborted, so a listener added to it could never fire:
// dropping listeners is unobservable and stops them piling up (and Node's
// MaxListenersExceededWarning) on a signal that lives as long as the process.
const controller = new AbortController();

/** An `AbortSignal` that never aborts and holds no listeners. */
export const neverAborts: AbortSignal = controller.signal;

const ignore = (): void => {};
Object.defineProperties(neverAborts, {
  addEventListener: { value: ignore },
  removeEventListener: { value: ignore },
  onabort: { get: () => null, set: ignore },
});
