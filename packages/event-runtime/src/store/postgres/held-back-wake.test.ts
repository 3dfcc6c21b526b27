import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../testing/manual-clock.js';
import { HeldBackWake, heldBackWakeMs, heldBackWakeMsMax } from './held-back-wake.js';

/** A waker whose watchers count their wake-ups and, like a subscription, read when woken. */
function setUp(options: { watched?: boolean } = {}) {
  const clock = new ManualClock();
  let wakes = 0;
  const waker = new HeldBackWake(
    clock,
    () => options.watched ?? true,
    () => {
      wakes++;
    },
  );
  return { clock, waker, wakes: () => wakes };
}

describe('HeldBackWake', () => {
  it('wakes again after 25 ms, doubling up to 1 s, for as long as reads find rows held back', async () => {
    const { clock, waker, wakes } = setUp();
    waker.readAll(true);
    const expected = [25, 50, 100, 200, 400, 800, 1_000, 1_000];
    for (const [index, waitMs] of expected.entries()) {
      expect(clock.nextDueMs).toBe(clock.now() + waitMs);
      await clock.advance(waitMs - 1);
      expect(wakes()).toBe(index);
      await clock.advance(1);
      expect(wakes()).toBe(index + 1);
      // The watchers' read after the wake-up still finds rows held back.
      waker.readAll(true);
    }
    expect(clock.delaysMs).toEqual([...expected, heldBackWakeMsMax]);
  });

  it('stops once a read finds nothing held back, and starts from 25 ms the next time', async () => {
    const { clock, waker, wakes } = setUp();
    waker.readAll(true);
    await clock.advance(heldBackWakeMs);
    waker.readAll(true);
    await clock.advance(2 * heldBackWakeMs);
    expect(wakes()).toBe(2);
    waker.readAll(false);
    expect(clock.pendingTimers).toBe(0);
    waker.readAll(true);
    expect(clock.delaysMs).toEqual([25, 50, 25]);
  });

  it('arms one wake-up at a time, however many reads find rows held back meanwhile', async () => {
    const { clock, waker, wakes } = setUp();
    waker.readAll(true);
    waker.readAll(true);
    // A read that caught up while a wake-up is armed does not cancel it: another watcher's
    // read may still be behind, and the wake-up is what brings it forward.
    waker.readAll(false);
    waker.readAll(true);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(heldBackWakeMs);
    expect(wakes()).toBe(1);
    expect(clock.pendingTimers).toBe(0);
  });

  it('arms nothing when nobody watches globally, and nothing more once closed', async () => {
    const unwatched = setUp({ watched: false });
    unwatched.waker.readAll(true);
    expect(unwatched.clock.pendingTimers).toBe(0);
    const { clock, waker, wakes } = setUp();
    waker.readAll(true);
    expect(clock.pendingTimers).toBe(1);
    waker.close();
    expect(clock.pendingTimers).toBe(0);
    waker.readAll(true);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(heldBackWakeMsMax);
    expect(wakes()).toBe(0);
  });
});
