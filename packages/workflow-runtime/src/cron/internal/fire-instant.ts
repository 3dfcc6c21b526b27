import { DAY_MS } from './civil-date.js';
import type { ZoneClock } from './zone-clock.js';

/** Where a matching wall time lands: an instant to fire at, or a later wall time to search from. */
export type FireResolution =
  | { readonly fireAtMs: number; readonly resumeAtWallMs?: never }
  | { readonly fireAtMs?: never; readonly resumeAtWallMs: number };

/**
 * The instant a matching wall time fires, when nothing may fire at or before `afterMs`
 * (whole seconds). One rule covers DST: each matching wall time fires once, at the first
 * instant whose wall clock reaches or passes it. So a wall time that exists once fires then;
 * one inside a spring-forward gap fires at the first instant after the gap; one that occurs
 * twice (fall-back) fires at its first occurrence, and if that is already past, the repeated
 * stretch is skipped and the search resumes at the wall time where it ends.
 *
 * Assumes a zone's offset changes at most once within a day either side of the wall time
 * (real transitions are weeks apart); with two changes that close, a fire near them could
 * land on the wrong side of one.
 */
export function fireInstant(zone: ZoneClock, wallMs: number, afterMs: number): FireResolution {
  if (zone.isUtc) return { fireAtMs: wallMs };
  const offsetBefore = zone.offsetAt(wallMs - DAY_MS);
  const offsetAfter = zone.offsetAt(wallMs + DAY_MS);
  const offsets = offsetBefore === offsetAfter ? [offsetBefore] : [offsetBefore, offsetAfter];
  let firstMs = Number.POSITIVE_INFINITY;
  let firstOffset = 0;
  // Every instant showing this wall time is `wallMs - offset` for an offset in force nearby.
  for (let i = 0; i < offsets.length && i < 4; i++) {
    const offset = offsets[i]!;
    const actual = zone.offsetAt(wallMs - offset);
    if (actual !== offset) {
      if (!offsets.includes(actual)) offsets.push(actual);
    } else if (wallMs - offset < firstMs) {
      firstMs = wallMs - offset;
      firstOffset = offset;
    }
  }
  if (firstMs === Number.POSITIVE_INFINITY) {
    const gapEndMs = firstInstantWhere(
      wallMs - DAY_MS,
      wallMs + DAY_MS,
      (i) => zone.wallAt(i) > wallMs,
    );
    return gapEndMs > afterMs ? { fireAtMs: gapEndMs } : { resumeAtWallMs: wallMs + 1000 };
  }
  if (firstMs > afterMs) return { fireAtMs: firstMs };
  // The first occurrence is past: `afterMs` sits in the repeat after a fall-back transition.
  if (zone.offsetAt(afterMs) === firstOffset) return { resumeAtWallMs: wallMs + 1000 };
  const transitionMs = firstInstantWhere(firstMs, afterMs, (i) => zone.offsetAt(i) !== firstOffset);
  const repeatEndWallMs = transitionMs + firstOffset;
  return { resumeAtWallMs: repeatEndWallMs > wallMs ? repeatEndWallMs : wallMs + 1000 };
}

/**
 * The first whole-second instant in (lowMs, highMs] where `holds` is true, by bisection;
 * `holds(lowMs)` is false, `holds(highMs)` true. About 17 steps for a two-day span.
 */
function firstInstantWhere(
  lowMs: number,
  highMs: number,
  holds: (instantMs: number) => boolean,
): number {
  let low = lowMs;
  let high = highMs;
  while (high - low > 1000) {
    const middle = low + Math.floor((high - low) / 2000) * 1000;
    if (holds(middle)) high = middle;
    else low = middle;
  }
  return high;
}
