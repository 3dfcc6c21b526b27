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

/** One keep-alive timer per clock, shared by everyone who holds it (and how many do). */
const holds = new WeakMap<Clock, { holders: number; cancel: () => void }>();

/**
 * Keeps the process alive (through `clock`, so a simulated clock owns it too) until the
 * returned release is called. Holders on one clock share one timer, armed by the first and
 * cancelled by the last release: every `result()` holds one while it waits, and arming a timer
 * per execution cost more than the rest of waiting for a local outcome.
 */
export function keepAlive(clock: Clock): () => void {
  let hold = holds.get(clock);
  if (hold === undefined) {
    hold = {
      holders: 0,
      cancel: clock.setRepeating(() => undefined, keepAliveMs, { keepAlive: true }),
    };
    holds.set(clock, hold);
  }
  hold.holders++;
  const held = hold;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--held.holders > 0) return;
    held.cancel();
    if (holds.get(clock) === held) holds.delete(clock);
  };
}
