import { describe, expect, it } from 'vitest';
import { costUsd } from './price-table.js';

describe('costUsd', () => {
  const prices = { m: { inputUsdPerMTok: 2, outputUsdPerMTok: 10, cachedInputUsdPerMTok: 0.5 } };

  it('charges cached input at the cached price and the rest at the input price', () => {
    const usage = { inputTokens: 1_000, outputTokens: 100, cachedInputTokens: 600 };
    expect(costUsd(usage, 'm', prices)).toBeCloseTo((400 * 2 + 600 * 0.5 + 100 * 10) / 1e6, 12);
  });

  it('is null, not zero, without a price or without token counts', () => {
    const usage = { inputTokens: 10, outputTokens: 10, cachedInputTokens: 0 };
    expect(costUsd(usage, 'other', prices)).toBeNull();
    expect(costUsd(usage, 'm', undefined)).toBeNull();
    expect(costUsd({ ...usage, outputTokens: null }, 'm', prices)).toBeNull();
    expect(costUsd(usage, 'toString', prices)).toBeNull();
  });
});
