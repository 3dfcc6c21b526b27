import { LoomError, SchedulerErrorCode } from './errors.js';
import {
  invalidArgument,
  isAbortSignal,
  isWholeNumber,
  scheduleAborted,
} from './internal/arguments.js';
import { abortLazy, LazyAbort } from './internal/lazy-abort.js';

export interface ParallelLimitOptions {
  /** Aborting it rejects with `SCHEDULE_ABORTED`, starts nothing more and aborts `context.signal`. */
  signal?: AbortSignal;
}

/** What every call of one `parallelLimit` shares. */
export interface ParallelLimitContext {
  /**
   * Aborts on the first failure or when the caller's signal aborts. Made on first read, so
   * calls that never read it cost no AbortController (~5 µs each on Node 20): read it only to
   * pass it on, e.g. `async (url, _index, { signal }) => fetch(url, { signal })`.
   */
  readonly signal: AbortSignal;
}

/** What `fn` is called with: the item, its index in `items`, and the shared context. */
export type ParallelLimitFn<T, R> = (
  item: T,
  index: number,
  context: ParallelLimitContext,
) => Promise<R>;

/**
 * Calls `fn` on every item with at most `limit` calls in flight, and resolves with the results
 * in input order (not completion order). `limit` is a whole number ≥ 1 or `Infinity`; a limit at
 * or above the item count takes the `Promise.all` path (every call starts at once).
 *
 * The first failure (a rejection or a synchronous throw) rejects at once with that error: no
 * further item starts, and the calls still in flight see `context.signal` abort (its reason
 * is a `SCHEDULE_ABORTED` error whose `cause` is the failure). They are not awaited: they run on
 * until they notice the signal, and whatever they resolve or reject with is discarded (never an
 * unhandled rejection). If you must know they stopped, have `fn` track them.
 *
 * Rejects with `INVALID_ARGUMENT` (fn not a function; limit 0, negative, NaN, fractional, not a
 * number; items not iterable) or `SCHEDULE_ABORTED` (the caller's signal aborted; same effect
 * on in-flight calls as a failure), or with the first error `fn` produced.
 *
 * @example
 * const pages = await parallelLimit(urls, 4, async (url, _index, { signal }) => {
 *   const response = await fetch(url, { signal });
 *   return response.text();
 * });
 */
export function parallelLimit<T, R>(
  items: Iterable<T>,
  limit: number,
  fn: ParallelLimitFn<T, R>,
  options?: ParallelLimitOptions,
): Promise<R[]> {
  if (typeof fn !== 'function') {
    return Promise.reject(
      invalidArgument(
        'fn',
        'a function (item, index, { signal }) => Promise',
        fn,
        'pass the work per item',
      ),
    );
  }
  if (limit !== Number.POSITIVE_INFINITY && !isWholeNumber(limit, 1)) {
    return Promise.reject(
      invalidArgument(
        'limit',
        'a whole number ≥ 1 or Infinity',
        limit,
        'pass Infinity for no limit',
      ),
    );
  }
  let list: readonly T[];
  if (Array.isArray(items)) {
    list = items;
  } else if (isIterable(items)) {
    try {
      list = Array.from(items);
    } catch (error) {
      return Promise.reject(error);
    }
  } else {
    return Promise.reject(
      invalidArgument(
        'items',
        'an iterable (array, Set, generator)',
        items,
        'pass a list of items',
      ),
    );
  }
  let callerSignal: AbortSignal | undefined;
  if (options !== undefined) {
    if (typeof options !== 'object' || options === null) {
      return Promise.reject(invalidArgument('options', 'an object', options, 'pass { signal }'));
    }
    if (options.signal !== undefined) {
      if (!isAbortSignal(options.signal)) {
        return Promise.reject(
          invalidArgument('signal', 'an AbortSignal', options.signal, 'pass controller.signal'),
        );
      }
      callerSignal = options.signal;
      if (callerSignal.aborted) {
        return Promise.reject(
          scheduleAborted(callerSignal, { started: 0, itemCount: list.length }),
        );
      }
    }
  }
  if (list.length === 0) return Promise.resolve([]);
  if (limit >= list.length) return allAtOnce(list, fn, callerSignal);
  return bounded(list, limit, fn, callerSignal);
}

function isIterable(value: unknown): value is Iterable<unknown> {
  return (
    value !== null &&
    value !== undefined &&
    typeof (value as Iterable<unknown>)[Symbol.iterator] === 'function'
  );
}

/** The abort reason in-flight calls see when another call failed. */
function siblingFailed(error: unknown): LoomError {
  return new LoomError(
    SchedulerErrorCode.SCHEDULE_ABORTED,
    'another call of this parallelLimit failed (see cause), so the rest were aborted: stop work and return',
    {},
    error,
  );
}

const ignore = (): void => {};

// The Promise.all path: the cost over Promise.all is the context object and one `.then`.
function allAtOnce<T, R>(
  items: readonly T[],
  fn: ParallelLimitFn<T, R>,
  callerSignal: AbortSignal | undefined,
): Promise<R[]> {
  // A class instance, not an object literal with a getter: V8 builds such literals on a slow
  // path, which doubled the cost of a 10-item call (P16).
  const context = new LazyAbort();
  const count = items.length;
  const calls: Promise<R>[] = [];
  for (let index = 0; index < count; index++) {
    try {
      calls.push(fn(items[index] as T, index, context));
    } catch (error) {
      abortLazy(context, siblingFailed(error));
      for (let started = 0; started < index; started++)
        Promise.resolve(calls[started]).catch(ignore);
      return Promise.reject(error);
    }
  }
  const all = Promise.all(calls);
  if (callerSignal === undefined) {
    return all.then(undefined, (error: unknown) => {
      abortLazy(context, siblingFailed(error));
      throw error;
    });
  }
  const caller = callerSignal;
  return new Promise<R[]>((resolve, reject) => {
    const onCallerAbort = (): void => {
      abortLazy(context, caller.reason);
      reject(scheduleAborted(caller, { started: count, itemCount: count }));
    };
    caller.addEventListener('abort', onCallerAbort, { once: true });
    all.then(
      (values) => {
        caller.removeEventListener('abort', onCallerAbort);
        resolve(values);
      },
      (error: unknown) => {
        caller.removeEventListener('abort', onCallerAbort);
        abortLazy(context, siblingFailed(error));
        reject(error);
      },
    );
  });
}

// limit < items.length here. Each settled call starts the next item, so at most `limit` are in
// flight; callbacks rather than `limit` async workers, to save a promise per item.
function bounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: ParallelLimitFn<T, R>,
  callerSignal: AbortSignal | undefined,
): Promise<R[]> {
  return new Promise<R[]>((resolve, reject) => {
    const context = new LazyAbort();
    const count = items.length;
    const results = new Array<R>(count);
    let started = 0;
    let completed = 0;
    let done = false;

    const stop = (): void => {
      done = true;
      callerSignal?.removeEventListener('abort', onCallerAbort);
    };
    const fail = (error: unknown, abortReason: unknown): void => {
      if (done) return;
      stop();
      abortLazy(context, abortReason);
      reject(error);
    };
    const onCallerAbort = (): void => {
      const caller = callerSignal!;
      fail(scheduleAborted(caller, { started, completed, itemCount: count }), caller.reason);
    };
    const startNext = (): void => {
      const index = started++;
      let call: Promise<R>;
      try {
        call = fn(items[index] as T, index, context);
      } catch (error) {
        fail(error, siblingFailed(error));
        return;
      }
      Promise.resolve(call).then(
        (value) => {
          if (done) return;
          results[index] = value;
          completed++;
          if (completed === count) {
            stop();
            resolve(results);
          } else if (started < count) {
            startNext();
          }
        },
        (error: unknown) => fail(error, siblingFailed(error)),
      );
    };

    callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
    for (let slot = 0; slot < limit && !done; slot++) startNext();
  });
}
