import { describe, expect, it } from 'vitest';
import { ManualClock } from './manual-clock.js';

describe('ManualClock', () => {
  it('fires due timers in due order, ties in the order they were armed, at their due time', async () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    clock.setTimer(() => fired.push(`b@${clock.now()}`), 20);
    clock.setTimer(() => fired.push(`a@${clock.now()}`), 10);
    clock.setTimer(() => fired.push(`c@${clock.now()}`), 20);
    clock.setTimer(() => fired.push(`late@${clock.now()}`), 31);
    await clock.advance(30);
    expect(fired).toEqual(['a@10', 'b@20', 'c@20']);
    expect(clock.now()).toBe(30);
    expect(clock.pendingTimers).toBe(1);
    expect(clock.nextDueMs).toBe(31);
  });

  it('lets what a timer starts settle (promises and deferred work) before the next one fires', async () => {
    const clock = new ManualClock(0);
    const log: string[] = [];
    clock.setTimer(() => {
      void (async () => {
        await Promise.resolve();
        await new Promise<void>((resolve) => clock.defer(resolve));
        log.push('first done');
      })();
    }, 10);
    clock.setTimer(() => log.push('second'), 10);
    await clock.advance(10);
    expect(log).toEqual(['first done', 'second']);
  });

  it('repeats until cancelled; a cancelled timer never fires', async () => {
    const clock = new ManualClock(0);
    const ticks: number[] = [];
    const stop = clock.setRepeating(() => ticks.push(clock.now()), 100);
    const cancel = clock.setTimer(() => ticks.push(-1), 150);
    cancel();
    await clock.advance(350);
    stop();
    await clock.advance(1_000);
    expect(ticks).toEqual([100, 200, 300]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('moves time at once when no timer is armed, and never backwards', async () => {
    const clock = new ManualClock(5);
    void clock.advance(10);
    expect(clock.now()).toBe(15);
    expect(() => clock.advance(-1)).toThrow(/non-negative/);
  });

  it('runUntil jumps from timer to timer until done, and stops when none is left', async () => {
    const clock = new ManualClock(0);
    let count = 0;
    clock.setRepeating(() => count++, 1_000);
    await clock.runUntil(() => count === 3);
    expect(clock.now()).toBe(3_000);
    const idle = new ManualClock(0);
    await idle.runUntil(() => false);
    expect(idle.now()).toBe(0);
  });

  it('runUntilSettled fires timers until the promise settles and hands back its value or error', async () => {
    const clock = new ManualClock(0);
    const later = (ms: number, fail: boolean) =>
      new Promise<number>((resolve, reject) => {
        clock.setTimer(() => (fail ? reject(new Error('late')) : resolve(clock.now())), ms);
      });
    clock.setTimer(() => undefined, 5_000);
    expect(await clock.runUntilSettled(later(2_000, false))).toBe(2_000);
    expect(clock.now()).toBe(2_000);
    const error = await clock.runUntilSettled(later(1_000, true)).catch((caught) => caught);
    expect((error as Error).message).toBe('late');
    expect(clock.now()).toBe(3_000);
  });
});
