/** A deterministic source of randomness: the same seed gives the same draws, in any process. */
export interface SeededRandom {
  /** A number in [0, 1). */
  next(): number;
  /** An integer in [0, maxExclusive). */
  int(maxExclusive: number): number;
  /** An integer in [min, max]. */
  between(min: number, max: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  /** One of `items` (which must not be empty). */
  pick<T>(items: readonly T[]): T;
  /**
   * An independent stream named `label`: draws added to one stream never shift another's, so a
   * new fault kind does not reshuffle the workload of every existing seed.
   */
  fork(label: string): SeededRandom;
}

/** FNV-1a over a string, to mix a fork label into a seed. */
function hashLabel(seed: number, label: string): number {
  let hash = (2166136261 ^ seed) >>> 0;
  for (let index = 0; index < label.length; index++) {
    hash ^= label.charCodeAt(index);
    hash = Math.imul(hash, 16777619) >>> 0;
  }
  return hash;
}

/**
 * A {@link SeededRandom} on mulberry32 (32-bit state, full period, fast): good enough to pick
 * fault moments, not for cryptography.
 *
 * @example
 * const random = seededRandom(42);
 * const faults = random.fork('faults');
 * if (faults.chance(0.05)) throw transientError();
 */
export function seededRandom(seed: number): SeededRandom {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (maxExclusive: number) => Math.floor(next() * maxExclusive);
  return {
    next,
    int,
    between: (min, max) => min + int(max - min + 1),
    chance: (p) => p > 0 && next() < p,
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new Error('SeededRandom.pick needs at least one item');
      return items[int(items.length)] as T;
    },
    fork: (label) => seededRandom(hashLabel(seed, label)),
  };
}
