import { describe, expect, it } from 'vitest';
import { interleavedSchedule, rotatingOrder } from './interleave.js';

describe('interleaving', () => {
  it('rotates the variant order by one per repeat', () => {
    expect(rotatingOrder(['off', 'eager', 'lazy'], 0)).toEqual(['off', 'eager', 'lazy']);
    expect(rotatingOrder(['off', 'eager', 'lazy'], 1)).toEqual(['eager', 'lazy', 'off']);
    expect(rotatingOrder(['off', 'eager', 'lazy'], 2)).toEqual(['lazy', 'off', 'eager']);
    expect(rotatingOrder(['off', 'eager', 'lazy'], 3)).toEqual(['off', 'eager', 'lazy']);
    expect(rotatingOrder([], 4)).toEqual([]);
  });

  it('runs A B A B: every variant once per repeat, repeats in sequence', () => {
    const schedule = interleavedSchedule(['A', 'B'], 3).map(
      ({ repeat, variant }) => `${repeat}${variant}`,
    );
    expect(schedule).toEqual(['0A', '0B', '1B', '1A', '2A', '2B']);
  });

  it('puts each variant first equally often over a full rotation', () => {
    const variants = ['a', 'b', 'c', 'd'];
    const firsts = interleavedSchedule(variants, 8)
      .filter((_, index) => index % variants.length === 0)
      .map(({ variant }) => variant);
    for (const variant of variants) expect(firsts.filter((v) => v === variant)).toHaveLength(2);
  });
});
