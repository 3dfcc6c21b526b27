import { LoomError } from './errors.js';
import { invalidTask, readScheduleOptions, scheduleAborted } from './internal/arguments.js';
import { neverAborts } from './internal/never-aborts.js';
import { runTask } from './internal/run-task.js';
import type { Priority } from './priority.js';

export type { Priority } from './priority.js';

/**
 * A unit of work. It gets the caller's `signal`, or, when the caller passed none, a shared
 * signal that never aborts (so `fetch(url, { signal })` is always valid inside a task).
 */
export type Task<T> = (signal: AbortSignal) => Promise<T>;

export interface ScheduleTaskOptions {
  /** Default `'normal'`. A waiting `'high'` task starts before every waiting `'normal'` one. */
  priority?: Priority;
  /**
   * Fairness key (a tenant, an execution, an agent), at most `keyLengthMax` characters; default
   * `''`. Within one priority the keys that have waiting tasks are served round-robin, one start
   * each per round, so a key with a thousand queued tasks cannot starve a key with one.
   */
  key?: string;
  /**
   * Aborting drops a waiting task: it is removed from the queue, never runs, and its promise
   * rejects with `SCHEDULE_ABORTED`. A running task is not interrupted: it sees this signal
   * abort and decides what to do.
   */
  signal?: AbortSignal;
}

/**
 * Runs `task` now, on the process-wide default, which has no cap and keeps no count: it costs
 * what calling the task directly costs (P16). `priority` and `key` are checked and, since
 * nothing ever waits here, have no effect. For a cap, a queue or `idle()`, use `createScheduler`.
 *
 * Rejects with `SCHEDULE_ABORTED` (signal already aborted: the task does not run) or
 * `INVALID_ARGUMENT` (not a function, a bad option); otherwise settles as the task does.
 *
 * @example
 * const body = await schedule((signal) => fetch(url, { signal }).then((r) => r.text()), { signal });
 */
export function schedule<T>(task: Task<T>, options?: ScheduleTaskOptions): Promise<T> {
  if (typeof task !== 'function') return Promise.reject(invalidTask(task));
  let signal = neverAborts;
  if (options !== undefined) {
    const read = readScheduleOptions(options);
    if (read instanceof LoomError) return Promise.reject(read);
    if (read.signal !== undefined) {
      if (read.signal.aborted) {
        return Promise.reject(
          scheduleAborted(read.signal, { priority: read.priority, key: read.key }),
        );
      }
      signal = read.signal;
    }
  }
  return runTask(task, signal);
}
