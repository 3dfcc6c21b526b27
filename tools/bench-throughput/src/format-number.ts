import type { Summary } from './stats.js';

/** A rate or count with thousands separators: 12,345. Below 100, one decimal: 42.5. */
export function formatCount(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const rounded = Math.abs(value) >= 100 ? Math.round(value) : Math.round(value * 10) / 10;
  return rounded.toLocaleString('en-US', { maximumFractionDigits: 1 });
}

/** Milliseconds with precision that fits their size: 0.083, 1.42, 12.3, 150. */
export function formatMs(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (value >= 100) return Math.round(value).toLocaleString('en-US');
  if (value >= 10) return value.toFixed(1);
  if (value >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

/** A ratio as 0.93×. */
export function formatRatio(value: number): string {
  return `${value.toFixed(2)}×`;
}

/** A share as 4.2 % (one decimal), negative shares kept (a variant that ran faster). */
export function formatPercent(share: number): string {
  return `${(share * 100).toFixed(1)} %`;
}

/** `median (min..max)` of a summary, each part formatted by `format`. */
export function formatSummary(summary: Summary, format: (value: number) => string): string {
  return `${format(summary.median)} (${format(summary.min)}..${format(summary.max)})`;
}
