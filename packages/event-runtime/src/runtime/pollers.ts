import type { Clock } from '../clock.js';

/**
 * Runs `work` every `ms` on `clock` (never overlapping itself) until the returned stop is
 * called; 0 = never. The timer never keeps the process alive.
 */
export function every(clock: Clock, ms: number, work: () => Promise<unknown>): () => void {
  if (ms <= 0) return () => undefined;
  let running = false;
  return clock.setRepeating(() => {
    if (running) return;
    running = true;
    void work().finally(() => {
      running = false;
    });
  }, ms);
}

/** Longest a keep-alive timer waits before it re-arms itself (it only exists to be armed). */
const keepAliveMs = 2 ** 30;

/**
 * Keeps the process alive (through `clock`, so a simulated clock owns it too) until the
 * returned release is called.
 */
export function keepAlive(clock: Clock): () => void {
  return clock.setRepeating(() => undefined, keepAliveMs, { keepAlive: true });
}
