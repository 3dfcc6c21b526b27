import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { wrapEffect } from '../compose-middleware.js';
import { isLoomError, type LoomError, MiddlewareErrorCode } from '../errors.js';
import { expectInvalidOption } from '../internal/expect-invalid-option.test-support.js';
import { MiddlewareLimits } from '../limits.js';
import { testEffectContext } from '../testing/test-effect-context.js';
import {
  type CircuitBreakerOptions,
  type CircuitStateChange,
  circuitBreakerMiddleware,
} from './circuit-breaker-middleware.js';

function setup(options: Partial<CircuitBreakerOptions> = {}) {
  const time = new ManualClock(0);
  const changes: CircuitStateChange[] = [];
  const breaker = circuitBreakerMiddleware({
    failureThreshold: 3,
    resetAfterMs: 10_000,
    clock: time,
    onStateChange: (change) => changes.push(change),
    ...options,
  });
  let calls = 0;
  /** Calls through the breaker; the effect fails when `fails`. Resolves to what happened. */
  const call = (fails: boolean) =>
    wrapEffect(breaker, () => {
      calls += 1;
      if (fails) throw new Error('dependency down');
      return 'ok';
    })(testEffectContext()).then(
      (value) => value,
      (error: unknown) => (isLoomError(error) ? error.code : 'effect error'),
    );
  const states = () => changes.map((c) => c.to);
  return { time, breaker, call, changes, states, calls: () => calls };
}

describe('circuitBreakerMiddleware', () => {
  it('opens after failureThreshold consecutive failures and then refuses without calling', async () => {
    const { call, calls, states } = setup();
    for (let i = 0; i < 3; i++) expect(await call(true)).toBe('effect error');
    expect(states()).toEqual(['open']);
    expect(await call(false)).toBe(MiddlewareErrorCode.CIRCUIT_OPEN);
    expect(calls()).toBe(3);
  });

  it('says when it will let a probe through', async () => {
    const { time, breaker, call } = setup();
    for (let i = 0; i < 3; i++) await call(true);
    await time.advance(4_000);
    const error = (await wrapEffect(
      breaker,
      () => 1,
    )(testEffectContext()).catch((e: unknown) => e)) as LoomError;
    expect(error.fields).toMatchObject({ state: 'open', retryAfterMs: 6_000, stepName: 'charge' });
    expect(error.message).toContain('3 consecutive failures');
  });

  it('a success resets the count of consecutive failures', async () => {
    const { call, states } = setup();
    for (const fails of [true, true, false, true, true]) await call(fails);
    expect(states()).toEqual([]);
    await call(true);
    expect(states()).toEqual(['open']);
  });

  it('after resetAfterMs lets one probe through; its success closes the circuit', async () => {
    const { time, breaker, call, calls, changes } = setup();
    for (let i = 0; i < 3; i++) await call(true);
    await time.advance(10_000);
    let finishProbe: (value: string) => void = () => {};
    const probe = wrapEffect(
      breaker,
      () =>
        new Promise<string>((resolve) => {
          finishProbe = resolve;
        }),
    )(testEffectContext());
    const refused = (await wrapEffect(
      breaker,
      () => 'x',
    )(testEffectContext()).catch((e: unknown) => e)) as LoomError;
    expect(refused.code).toBe(MiddlewareErrorCode.CIRCUIT_OPEN);
    expect(refused.fields.state).toBe('half-open');
    finishProbe('recovered');
    expect(await probe).toBe('recovered');
    expect(await call(false)).toBe('ok');
    expect(calls()).toBe(4);
    expect(changes).toEqual([
      { from: 'closed', to: 'open', atMs: 0 },
      { from: 'open', to: 'half-open', atMs: 10_000 },
      { from: 'half-open', to: 'closed', atMs: 10_000 },
    ]);
  });

  it("a probe's failure opens the circuit again for another resetAfterMs", async () => {
    const { time, call, states } = setup();
    for (let i = 0; i < 3; i++) await call(true);
    await time.advance(10_000);
    expect(await call(true)).toBe('effect error');
    expect(states()).toEqual(['open', 'half-open', 'open']);
    await time.advance(9_999);
    expect(await call(false)).toBe(MiddlewareErrorCode.CIRCUIT_OPEN);
    await time.advance(1);
    expect(await call(false)).toBe('ok');
    expect(states()).toEqual(['open', 'half-open', 'open', 'half-open', 'closed']);
  });

  it('halfOpenMax lets that many probes run at once', async () => {
    const { time, breaker, call } = setup({ halfOpenMax: 2 });
    for (let i = 0; i < 3; i++) await call(true);
    await time.advance(10_000);
    const hang = () => new Promise<string>(() => {});
    let started = 0;
    const probe = () =>
      wrapEffect(breaker, () => {
        started += 1;
        return hang();
      })(testEffectContext()).catch((e: unknown) => (e as LoomError).code);
    void probe();
    void probe();
    expect(await probe()).toBe(MiddlewareErrorCode.CIRCUIT_OPEN);
    expect(started).toBe(2);
  });

  it('an error isFailure rejects counts as the dependency answering', async () => {
    const { call, states } = setup({ isFailure: () => false });
    for (let i = 0; i < 5; i++) expect(await call(true)).toBe('effect error');
    expect(states()).toEqual([]);
  });

  it('ignores the outcome of a call started before the circuit opened', async () => {
    const { breaker, call, states } = setup({ failureThreshold: 1 });
    let finishSlow: (value: string) => void = () => {};
    const slow = wrapEffect(
      breaker,
      () =>
        new Promise<string>((resolve) => {
          finishSlow = resolve;
        }),
    )(testEffectContext());
    await call(true);
    finishSlow('late success');
    expect(await slow).toBe('late success');
    expect(states()).toEqual(['open']);
    expect(await call(false)).toBe(MiddlewareErrorCode.CIRCUIT_OPEN);
  });

  it('a throwing onStateChange does not change the outcome', async () => {
    const hookErrors: unknown[] = [];
    const { call } = setup({
      failureThreshold: 1,
      onStateChange: () => {
        throw new Error('observer bug');
      },
      onHookError: (error) => hookErrors.push(error),
    });
    expect(await call(true)).toBe('effect error');
    expect(hookErrors).toHaveLength(1);
  });

  it('names each bad option', () => {
    const base = { failureThreshold: 3, resetAfterMs: 1_000 };
    const bad: [unknown, string][] = [
      [{ ...base, failureThreshold: 0 }, 'failureThreshold'],
      [{ ...base, failureThreshold: Number.NaN }, 'failureThreshold'],
      [{ ...base, failureThreshold: 2.5 }, 'failureThreshold'],
      [{ resetAfterMs: 1_000 }, 'failureThreshold'],
      [{ ...base, resetAfterMs: -1 }, 'resetAfterMs'],
      [{ ...base, resetAfterMs: 0 }, 'resetAfterMs'],
      [{ ...base, resetAfterMs: MiddlewareLimits.timerMsMax + 1 }, 'resetAfterMs'],
      [{ ...base, halfOpenMax: 0 }, 'halfOpenMax'],
      [{ ...base, halfOpenMax: MiddlewareLimits.halfOpenMax + 1 }, 'halfOpenMax'],
      [{ ...base, clock: Date }, 'clock'],
      [{ ...base, isFailure: 'yes' }, 'isFailure'],
      [{ ...base, windowMs: 5 }, 'windowMs'],
    ];
    for (const [options, option] of bad) {
      expectInvalidOption(() => circuitBreakerMiddleware(options as never), option);
    }
  });
});
