import { setTimeout as sleep } from 'node:timers/promises';
import type { Flow, JsonValue } from '@loom/event-runtime';

/** A 256-byte JSON payload (its stored text is exactly 256 bytes), the size every suite uses. */
export const payloadBytes = 256;

export function payload256(): { [key: string]: JsonValue } {
  const overhead = JSON.stringify({ data: '' }).length;
  const value = { data: 'x'.repeat(payloadBytes - overhead) };
  if (Buffer.byteLength(JSON.stringify(value)) !== payloadBytes) {
    throw new Error('invariant: the benchmark payload is not 256 bytes');
  }
  return value;
}

/** Where a flow's effects report the time they spent (P11 attribution). */
export interface EffectClock {
  effectMs: number;
}

/**
 * A flow of `steps` steps whose effects take `effectMs` (0: return at once, no timer at all).
 * It writes 2 × steps + 2 events: execution.started, step.started/completed per step,
 * execution.completed.
 */
export function benchFlow(
  steps: number,
  effectMs: number,
  clock?: EffectClock,
): Flow<JsonValue, null> {
  const names = Array.from({ length: steps }, (_, index) => `step-${index}`);
  return {
    name: `bench-${steps}-step-${effectMs}ms`,
    async run(ctx) {
      for (const name of names) {
        await ctx.step(name, async () => {
          if (clock === undefined) {
            if (effectMs > 0) await sleep(effectMs);
            return null;
          }
          const started = performance.now();
          if (effectMs > 0) await sleep(effectMs);
          clock.effectMs += performance.now() - started;
          return null;
        });
      }
      return null;
    },
  };
}

/** Events an n-step bench flow writes. */
export function eventsPerExecution(steps: number): number {
  return 2 * steps + 2;
}
