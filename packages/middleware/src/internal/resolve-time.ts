import { type Clock, type SetTimer, systemClock, systemSetTimer } from '../time.js';
import { optionalClock, optionalFunction } from './options.js';

/** The clock and timer a middleware uses: the injected ones, or the real ones. */
export interface ResolvedTime {
  clock: Clock;
  setTimer: SetTimer;
}

/** Validates `clock` and `setTimer` of a middleware's options and fills in the defaults. */
export function resolveTime(where: string, options: { clock?: unknown; setTimer?: unknown }) {
  return {
    clock: optionalClock<Clock>(where, options.clock) ?? systemClock,
    setTimer: optionalFunction<SetTimer>(where, 'setTimer', options.setTimer) ?? systemSetTimer,
  } satisfies ResolvedTime;
}
