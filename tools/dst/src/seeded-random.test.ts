import { describe, expect, it } from 'vitest';
import { seededRandom } from './seeded-random.js';

describe('seededRandom', () => {
  it('gives the same draws for the same seed and other draws for another', () => {
    const draws = (seed: number) => Array.from({ length: 5 }, seededRandom(seed).next);
    expect(draws(7)).toEqual(draws(7));
    expect(draws(8)).not.toEqual(draws(7));
    for (const value of draws(9)) {
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThan(1);
    }
  });

  it('a fork is independent: drawing from the parent does not shift it', () => {
    const a = seededRandom(5);
    const b = seededRandom(5);
    b.next();
    b.next();
    expect(a.fork('faults').next()).toBe(b.fork('faults').next());
    expect(a.fork('faults').next()).not.toBe(a.fork('workload').next());
  });

  it('between and int stay in range', () => {
    const random = seededRandom(11);
    for (let draw = 0; draw < 1_000; draw++) {
      const value = random.between(3, 5);
      expect([3, 4, 5]).toContain(value);
      expect(random.int(2)).toBeLessThan(2);
    }
  });
});
