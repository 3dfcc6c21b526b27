import type { WaitKind } from './envelope.js';

/**
 * Every {@link WaitKind}, in the order of their bits in the execution index's `waiting_for`
 * column (bit `1 << i` for `waitKinds[i]`). Append only: a stored bit never changes meaning.
 */
export const waitKinds = [
  'timer',
  'signal',
  'approval',
  'question',
  'child',
] as const satisfies readonly WaitKind[];

/**
 * The bit of each wait kind in the index's `waiting_for` column (an integer; NULL when the writer
 * did not say). A view's SQL tests `waiting_for & bit <> 0`. ADR 0062.
 */
export const waitKindBits: Readonly<Record<WaitKind, number>> = {
  timer: 1,
  signal: 2,
  approval: 4,
  question: 8,
  child: 16,
};

/** The kinds a `waiting_for` value holds, in {@link waitKinds} order. */
export function waitKindsOf(bits: number): WaitKind[] {
  const kinds: WaitKind[] = [];
  for (const kind of waitKinds) if ((bits & waitKindBits[kind]) !== 0) kinds.push(kind);
  return kinds;
}
