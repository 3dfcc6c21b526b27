import type { ModelUsage } from './model-provider.js';

/** What one model costs, in US dollars per million tokens. */
export interface ModelPrice {
  inputUsdPerMTok: number;
  outputUsdPerMTok: number;
  /** For input tokens read from the prompt cache. Default: `inputUsdPerMTok`. */
  cachedInputUsdPerMTok?: number;
}

/**
 * Prices by model id (as the response's `model` names it). Loom ships none: prices change, and a
 * wrong price is worse than an unknown one.
 */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/**
 * The cost of one call, or `null` when it is unknown: no price for the model, or a token count
 * the provider did not report. Never guesses zero.
 *
 * @example
 * costUsd({ inputTokens: 1_000, outputTokens: 200, cachedInputTokens: 0 }, 'gpt-4o', prices);
 */
export function costUsd(
  usage: ModelUsage,
  model: string,
  prices: PriceTable | undefined,
): number | null {
  const price = prices !== undefined && Object.hasOwn(prices, model) ? prices[model] : undefined;
  if (price === undefined) return null;
  const { inputTokens, outputTokens } = usage;
  if (inputTokens === null || outputTokens === null) return null;
  const cached = Math.min(usage.cachedInputTokens ?? 0, inputTokens);
  const cachedPrice = price.cachedInputUsdPerMTok ?? price.inputUsdPerMTok;
  return (
    ((inputTokens - cached) * price.inputUsdPerMTok +
      cached * cachedPrice +
      outputTokens * price.outputUsdPerMTok) /
    1_000_000
  );
}
