import type { SetTimer } from '../time.js';

/**
 * Resolves after `ms` on `setTimer`, or rejects with `signal.reason` as soon as the signal
 * aborts (at once if it already has). The timer and the listener are removed either way.
 */
export function sleep(ms: number, signal: AbortSignal, setTimer: SetTimer): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      cancel();
      reject(signal.reason);
    };
    const cancel = setTimer(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
