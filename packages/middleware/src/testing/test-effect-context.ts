import type { AttemptContext } from '../effect-context.js';

/**
 * An effect context for tests: execution `exec-1`, step 0 `charge`, attempt 1, a fresh
 * signal; `overrides` replace any field (pass `signal` to control aborts).
 *
 * @example
 * const controller = new AbortController();
 * const ctx = testEffectContext({ stepName: 'refund', signal: controller.signal });
 */
export function testEffectContext(overrides: Partial<AttemptContext> = {}): AttemptContext {
  const executionId = overrides.executionId ?? 'exec-1';
  const stepIndex = overrides.stepIndex ?? 0;
  return {
    executionId,
    stepIndex,
    stepName: 'charge',
    idempotencyKey: `${executionId}/${stepIndex}`,
    attempt: 1,
    signal: new AbortController().signal,
    ...overrides,
  };
}
