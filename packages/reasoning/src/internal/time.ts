import type { Clock } from '@loom/event-runtime';
import type { SetTimer } from '../time.js';

export type { SetTimer };

/** `setTimeout`/`clearTimeout`; every timer this package arms is cancelled when its call settles. */
export const systemSetTimer: SetTimer = (fn, ms) => {
  const handle = setTimeout(fn, ms);
  return () => clearTimeout(handle);
};

type ArmingClock = Clock & {
  setTimer(fn: () => void, ms: number, options?: { keepAlive?: boolean }): () => void;
};

/**
 * The timer to use: the one injected, else the clock's own when it arms timers (a kernel clock
 * that owns time), else the real one.
 */
export function timerOf(clock: Clock, setTimer: SetTimer | undefined): SetTimer {
  if (setTimer !== undefined) return setTimer;
  const arming = clock as Partial<ArmingClock>;
  if (typeof arming.setTimer === 'function') {
    return (fn, ms) => (clock as ArmingClock).setTimer(fn, ms);
  }
  return systemSetTimer;
}

/** Resolves after `ms` on `setTimer`, or rejects with `signal.reason` once it aborts. */
export function sleep(ms: number, setTimer: SetTimer, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      cancel();
      reject(signal?.reason);
    };
    const cancel = setTimer(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
