import type { Backend } from './knobs.js';

/**
 * The environment knobs of the one-off benchmark scripts (`bench-p5`, `bench-agents-profile`),
 * each read from `process.env` and checked: a bad value throws naming the knob and the value.
 */

/** A positive integer knob, or `fallback` when unset or empty. */
export function intKnob(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** A count knob: a non-negative integer (0 allowed), or `fallback` when unset or empty. */
export function countKnob(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** A comma-separated list of positive integers, or `fallback` when unset or empty. */
export function listKnob(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  return raw.split(',').map((part) => {
    const value = Number(part.trim());
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new Error(`${name} must list positive integers, got ${JSON.stringify(raw)}`);
    }
    return value;
  });
}

/** `LOOM_BENCH_BACKENDS`: the backends to measure, comma-separated (default memory). */
export function backendsKnob(): Backend[] {
  return (process.env.LOOM_BENCH_BACKENDS || 'memory').split(',').map((name) => {
    const backend = name.trim();
    if (backend !== 'memory' && backend !== 'sqlite' && backend !== 'postgres') {
      throw new Error(`LOOM_BENCH_BACKENDS lists memory, sqlite, postgres; got ${name}`);
    }
    return backend;
  });
}

/** A profile knob: `cpu`, `alloc`, or undefined when unset or empty. */
export function profileKnob(name: string): 'cpu' | 'alloc' | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  if (raw !== 'cpu' && raw !== 'alloc') {
    throw new Error(`${name} must be cpu or alloc, got ${JSON.stringify(raw)}`);
  }
  return raw;
}

/** A number with `digits` decimals and thousands separators: 12,345.6. */
export function formatNumber(value: number, digits: number): string {
  return value.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}
