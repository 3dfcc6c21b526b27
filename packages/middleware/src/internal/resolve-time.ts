import type { Clock as KernelClock } from '@loom/event-runtime';
import type { EffectContext } from '../effect-context.js';
import { monotonicClock, type NowClock, type SetTimer, systemSetTimer } from '../time.js';
import { optionalClock, optionalFunction } from './options.js';

/** The clock and timer a middleware uses: the injected ones, or the real ones. */
export interface ResolvedTime {
  clock: NowClock;
  setTimer: SetTimer;
  /**
   * True when the options chose the timer (a `setTimer`, or a `clock` that arms timers): it wins
   * over the effect's clock.
   */
  timerInjected: boolean;
}

/** A {@link SetTimer} on a kernel clock. Like `systemSetTimer`, a pending timer keeps the process up. */
export function kernelSetTimer(clock: KernelClock): SetTimer {
  return (fn, ms) => clock.setTimer(fn, ms, { keepAlive: true });
}

function armsTimers(clock: NowClock): clock is NowClock & KernelClock {
  return typeof (clock as Partial<KernelClock>).setTimer === 'function';
}

/**
 * Validates `clock` and `setTimer` of a middleware's options and fills in the defaults. A
 * `clock` that arms timers (the kernel's `Clock`: `runtime.clock`, a `ManualClock`) gives the
 * timers too, unless a `setTimer` is given.
 */
export function resolveTime(
  where: string,
  options: { clock?: unknown; setTimer?: unknown },
): ResolvedTime {
  const clock = optionalClock<NowClock>(where, options.clock);
  const setTimer = optionalFunction<SetTimer>(where, 'setTimer', options.setTimer);
  if (setTimer !== undefined) {
    return { clock: clock ?? monotonicClock, setTimer, timerInjected: true };
  }
  if (clock !== undefined && armsTimers(clock)) {
    return { clock, setTimer: kernelSetTimer(clock), timerInjected: true };
  }
  return { clock: clock ?? monotonicClock, setTimer: systemSetTimer, timerInjected: false };
}

/**
 * The timer one call uses: the injected one, else the clock of the runtime running the effect
 * (`ctx.clock`), so a step's retries and timeout wait on the runtime's time, else the real one.
 */
export function timerFor(time: ResolvedTime, ctx: EffectContext): SetTimer {
  if (time.timerInjected || ctx.clock === undefined) return time.setTimer;
  return kernelSetTimer(ctx.clock);
}
