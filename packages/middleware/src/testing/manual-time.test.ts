import { describe, expect, it } from 'vitest';
import { ManualTime } from './manual-time.js';

describe('ManualTime', () => {
  it('fires due timers in due order, ties in the order they were set', async () => {
    const time = new ManualTime(0);
    const fired: string[] = [];
    time.setTimer(() => fired.push('b@20'), 20);
    time.setTimer(() => fired.push('a@10'), 10);
    time.setTimer(() => fired.push('c@20'), 20);
    time.setTimer(() => fired.push('d@30'), 30);
    await time.advance(20);
    expect(fired).toEqual(['a@10', 'b@20', 'c@20']);
    expect(time.now()).toBe(20);
    expect(time.pendingTimers).toBe(1);
  });

  it('lets what a timer wakes run before the next timer fires', async () => {
    const time = new ManualTime(0);
    const trail: string[] = [];
    const wait = (ms: number) => new Promise<void>((resolve) => time.setTimer(resolve, ms));
    void (async () => {
      await wait(10);
      trail.push(`woke at ${time.now()}`);
      await wait(5);
      trail.push(`woke again at ${time.now()}`);
    })();
    time.setTimer(() => trail.push('timer at 15'), 15);
    await time.advance(100);
    expect(trail).toEqual(['woke at 10', 'timer at 15', 'woke again at 15']);
  });

  it('a cancelled timer never fires; runAll jumps to each timer in turn', async () => {
    const time = new ManualTime(0);
    const fired: number[] = [];
    const cancel = time.setTimer(() => fired.push(1), 5);
    time.setTimer(() => fired.push(2), 1_000);
    cancel();
    await time.runAll();
    expect(fired).toEqual([2]);
    expect(time.now()).toBe(1_000);
    expect(time.delaysMs).toEqual([5, 1_000]);
  });

  it('refuses to run backwards, and runAll stops a timer that keeps rescheduling', async () => {
    const time = new ManualTime(0);
    await expect(time.advance(-1)).rejects.toThrow(/non-negative/);
    const again = () => time.setTimer(again, 1);
    again();
    await expect(time.runAll(50)).rejects.toThrow(/50 timers/);
  });
});
