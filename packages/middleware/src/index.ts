export {
  type CircuitBreakerOptions,
  type CircuitState,
  type CircuitStateChange,
  circuitBreakerMiddleware,
} from './circuit-breaker/circuit-breaker-middleware.js';
export {
  composeMiddleware,
  type WrappableContext,
  wrapEffect,
} from './compose-middleware.js';
export type {
  AttemptContext,
  Effect,
  EffectContext,
  EffectMiddleware,
} from './effect-context.js';
export {
  isLoomError,
  isTerminalError,
  LoomError,
  MiddlewareErrorCode,
  type MiddlewareErrorFields,
  TerminalError,
  type TerminalErrorConstructor,
  terminalError,
} from './errors.js';
export type { HookErrorHandler } from './hook-error-handler.js';
export { MiddlewareLimits } from './limits.js';
export {
  type EffectLogRecord,
  type LoggingOptions,
  loggingMiddleware,
} from './logging/logging-middleware.js';
export { type RateLimitOptions, rateLimitMiddleware } from './rate-limit/rate-limit-middleware.js';
export {
  type BackoffOptions,
  type RetryOptions,
  retryMiddleware,
} from './retry/retry-middleware.js';
export {
  monotonicClock,
  type NowClock,
  type SetTimer,
  systemSetTimer,
  type TimeOptions,
} from './time.js';
export { type TimeoutOptions, timeoutMiddleware } from './timeout/timeout-middleware.js';
export {
  type EffectTiming,
  type EffectTimingOptions,
  effectTimingMiddleware,
} from './timing/effect-timing-middleware.js';
