/**
 * Named limits: every option that could grow without bound has one, and a value beyond it is
 * an `INVALID_ARGUMENT` naming the option.
 */
export const MiddlewareLimits = {
  /**
   * Longest delay any option may ask for (timeouts, backoff, reset, refill interval): Node's
   * `setTimeout` fires at once for a delay above 2^31 − 1 ms (about 24.8 days).
   */
  timerMsMax: 2_147_483_647,
  /**
   * Most attempts `retryMiddleware` makes for one call. All of them happen inside one durable
   * step run; past this, retry durably (a failed step and a timer) instead of in memory.
   */
  retryAttemptsMax: 100,
  /**
   * Most calls one `rateLimitMiddleware` holds waiting for a token; past it, calls are
   * rejected with `RATE_LIMITED`, because a queue that only grows hides an overload.
   */
  rateLimitQueueMax: 100_000,
  /** Most concurrent probes `circuitBreakerMiddleware` lets through while half-open. */
  halfOpenMax: 1_000,
} as const;
