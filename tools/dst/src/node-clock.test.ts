import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { NodeClock } from './node-clock.js';

describe('NodeClock', () => {
  it('a paused node fires nothing; what came due fires once when it resumes', async () => {
    const shared = new ManualClock();
    const node = new NodeClock(shared);
    const fired: string[] = [];
    node.setTimer(() => fired.push('once'), 100);
    node.setRepeating(() => fired.push('tick'), 50);
    node.pause();
    await shared.advance(500);
    expect(fired).toEqual([]);
    node.resume();
    await shared.advance(0);
    expect(fired.sort()).toEqual(['once', 'tick']);
  });

  it('a killed node never fires again, and whenRunning never resolves for it', async () => {
    const shared = new ManualClock();
    const node = new NodeClock(shared);
    let fired = 0;
    node.setRepeating(() => fired++, 10);
    await shared.advance(30);
    expect(fired).toBe(3);
    node.kill();
    await shared.advance(100);
    expect(fired).toBe(3);
    expect(shared.pendingTimers).toBe(0);
    const outcome = await Promise.race([
      node.whenRunning().then(() => 'ran'),
      shared.advance(10).then(() => 'still dead'),
    ]);
    expect(outcome).toBe('still dead');
  });
});
