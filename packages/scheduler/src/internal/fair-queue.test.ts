import { describe, expect, it } from 'vitest';
import { FairQueue, type FairQueueEntry, type Line } from './fair-queue.js';

interface Entry extends FairQueueEntry<Entry> {
  readonly name: string;
}

function entry(name: string, rank: number, key: string): Entry {
  return {
    name,
    rank,
    key,
    line: undefined as Line<Entry> | undefined,
    prev: undefined,
    next: undefined,
  };
}

function drain(queue: FairQueue<Entry>): string[] {
  const names: string[] = [];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) names.push(next.name);
  return names;
}

describe('FairQueue', () => {
  it('serves keys round-robin within a priority, FIFO within a key', () => {
    const queue = new FairQueue<Entry>();
    for (const name of ['a1', 'a2', 'a3', 'a4']) queue.push(entry(name, 1, 'a'));
    queue.push(entry('b1', 1, 'b'));
    queue.push(entry('b2', 1, 'b'));
    queue.push(entry('c1', 1, 'c'));
    expect(drain(queue)).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
    expect(queue.size).toBe(0);
  });

  it('serves a higher priority first whatever the key', () => {
    const queue = new FairQueue<Entry>();
    queue.push(entry('low', 2, 'a'));
    queue.push(entry('normal', 1, 'a'));
    queue.push(entry('high', 0, 'b'));
    expect(drain(queue)).toEqual(['high', 'normal', 'low']);
  });

  it('removes from the middle, and a key that empties leaves the rotation', () => {
    const queue = new FairQueue<Entry>();
    const a1 = entry('a1', 1, 'a');
    const a2 = entry('a2', 1, 'a');
    const b1 = entry('b1', 1, 'b');
    const c1 = entry('c1', 1, 'c');
    for (const e of [a1, a2, b1, c1]) queue.push(e);
    expect(queue.remove(a2)).toBe(true);
    expect(queue.remove(b1)).toBe(true);
    expect(queue.remove(b1)).toBe(false);
    expect(queue.size).toBe(2);
    expect(drain(queue)).toEqual(['a1', 'c1']);
  });

  it('a key that comes back joins the back of the rotation', () => {
    const queue = new FairQueue<Entry>();
    queue.push(entry('a1', 1, 'a'));
    queue.push(entry('b1', 1, 'b'));
    expect(queue.shift()?.name).toBe('a1');
    queue.push(entry('a2', 1, 'a'));
    queue.push(entry('c1', 1, 'c'));
    expect(drain(queue)).toEqual(['b1', 'a2', 'c1']);
  });
});
