import type { HookErrorHandler } from '../hook-error-handler.js';
import { errorText } from './error-text.js';

/**
 * Reports a hook's error as a Node process warning: visible on stderr and to
 * `process.on('warning')`, without changing the effect's outcome or stopping the process.
 */
export const warnHookError: HookErrorHandler = (error) => {
  process.emitWarning(error instanceof Error ? error : errorText(error), {
    type: 'LoomMiddlewareHookWarning',
  });
};

/**
 * Calls an observer hook so that it can never change what the effect returned or threw: a
 * throw (or a rejected promise) goes to `onHookError`; if that throws too, it is dropped,
 * because there is nowhere left to report it without changing the effect's outcome.
 */
export function callHook<A>(hook: (arg: A) => unknown, arg: A, onHookError: HookErrorHandler) {
  const report = (error: unknown) => {
    try {
      onHookError(error);
    } catch {
      // Dropped on purpose: see the function's comment.
    }
  };
  try {
    const returned = hook(arg);
    if (typeof (returned as PromiseLike<unknown> | undefined)?.then === 'function') {
      Promise.resolve(returned).catch(report);
    }
  } catch (error) {
    report(error);
  }
}
