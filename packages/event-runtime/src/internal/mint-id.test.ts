import { describe, expect, it } from 'vitest';
import { mintId, pooledRandom } from './mint-id.js';

describe('mintId', () => {
  it('mints ULIDs that are unique and sort in mint order across refills of its random pool', () => {
    // 10,000 ids: past the 4 KiB pool many times over (16 random characters a new millisecond).
    const ids = Array.from({ length: 10_000 }, () => mintId());
    for (const id of ids) expect(id).toMatch(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it('draws its randomness a byte at a time: every byte value, each an exact 1/256 step in [0, 1)', () => {
    const seen = new Set<number>();
    // 20,000 draws: the 4 KiB pool refilled four times.
    for (let n = 0; n < 20_000; n++) {
      const value = pooledRandom();
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThan(1);
      expect(Number.isInteger(value * 256)).toBe(true);
      seen.add(value);
    }
    expect(seen.size).toBe(256);
  });
});
