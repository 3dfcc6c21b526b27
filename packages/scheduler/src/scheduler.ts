import { LoomError, SchedulerErrorCode } from './errors.js';
import {
  defaultKey,
  invalidArgument,
  invalidTask,
  isWholeNumber,
  normalRank,
  readScheduleOptions,
  scheduleAborted,
} from './internal/arguments.js';
import { FairQueue, type FairQueueEntry } from './internal/fair-queue.js';
import { neverAborts } from './internal/never-aborts.js';
import { SchedulerLimits } from './limits.js';
import type { Priority, ScheduleTaskOptions, Task } from './schedule.js';

export interface SchedulerOptions {
  /** Most tasks running at once: a whole number ≥ 1, or `Infinity` (the default: nothing waits). */
  concurrencyMax?: number;
  /**
   * Most tasks waiting at once, a whole number ≥ 0; beyond it `schedule` rejects with
   * `SCHEDULER_QUEUE_FULL`. Default `SchedulerLimits.queueDepthMaxDefault` (100,000).
   */
  queueDepthMax?: number;
}

/** A task queue with a concurrency cap, priorities, per-key fairness and abortable waiting. */
export interface Scheduler {
  /**
   * Starts `task` now if a slot is free, otherwise queues it (strict priority, then round-robin
   * across keys, FIFO within a key). Settles as the task does. Rejects with `SCHEDULE_ABORTED`
   * (the signal aborted before the task started; it never runs), `SCHEDULER_QUEUE_FULL` or
   * `INVALID_ARGUMENT`. Safe to pass around unbound (`items.map(scheduler.schedule)` style).
   */
  readonly schedule: <T>(task: Task<T>, options?: ScheduleTaskOptions) => Promise<T>;
  /** Tasks started and not yet settled. */
  readonly running: number;
  /** Tasks queued and not yet started. */
  readonly waiting: number;
  readonly concurrencyMax: number;
  readonly queueDepthMax: number;
  /** Resolves once nothing runs and nothing waits (at once if that is already so). */
  idle(): Promise<void>;
}

/**
 * Creates a scheduler. Unlike the module-level `schedule`, it counts running tasks (for
 * `running` and `idle()`) even without a cap, which costs one extra promise per task.
 * Throws `INVALID_ARGUMENT` for a `concurrencyMax` or `queueDepthMax` that is not a whole number
 * in range (0, negative, NaN, 1.5, a string).
 *
 * @example
 * const modelCalls = createScheduler({ concurrencyMax: 8 });
 * const answer = await modelCalls.schedule((signal) => callModel(prompt, { signal }), {
 *   priority: 'high',
 *   key: tenantId,
 *   signal,
 * });
 */
export function createScheduler(options: SchedulerOptions = {}): Scheduler {
  if (typeof options !== 'object' || options === null) {
    throw invalidArgument(
      'options',
      'an object',
      options,
      'pass { concurrencyMax, queueDepthMax }',
    );
  }
  const { concurrencyMax = Number.POSITIVE_INFINITY, queueDepthMax } = options;
  if (concurrencyMax !== Number.POSITIVE_INFINITY && !isWholeNumber(concurrencyMax, 1)) {
    throw invalidArgument(
      'concurrencyMax',
      'a whole number ≥ 1 or Infinity',
      concurrencyMax,
      'omit it (or pass Infinity) for no cap',
    );
  }
  const depth = queueDepthMax ?? SchedulerLimits.queueDepthMaxDefault;
  if (!isWholeNumber(depth, 0)) {
    throw invalidArgument(
      'queueDepthMax',
      'a whole number ≥ 0',
      queueDepthMax,
      `omit it for the default (${SchedulerLimits.queueDepthMaxDefault}); a queue needs a bound`,
    );
  }
  return new TaskScheduler(concurrencyMax, depth);
}

interface WaitingTask extends FairQueueEntry<WaitingTask> {
  readonly task: Task<unknown>;
  readonly priority: Priority;
  readonly signal: AbortSignal;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  onAbort: (() => void) | undefined;
}

// Invariant: something waits only while every slot is busy (waiting > 0 ⇒ running = max), so a
// new task either starts at once or queues behind everyone already waiting.
class TaskScheduler implements Scheduler {
  readonly concurrencyMax: number;
  readonly queueDepthMax: number;
  readonly #queue = new FairQueue<WaitingTask>();
  #running = 0;
  #idleWaiters: (() => void)[] = [];

  constructor(concurrencyMax: number, queueDepthMax: number) {
    this.concurrencyMax = concurrencyMax;
    this.queueDepthMax = queueDepthMax;
  }

  get running(): number {
    return this.#running;
  }

  get waiting(): number {
    return this.#queue.size;
  }

  readonly schedule = <T>(task: Task<T>, options?: ScheduleTaskOptions): Promise<T> => {
    if (typeof task !== 'function') return Promise.reject(invalidTask(task));
    let priority: Priority = 'normal';
    let rank: number = normalRank;
    let key = defaultKey;
    let signal = neverAborts;
    if (options !== undefined) {
      const read = readScheduleOptions(options);
      if (read instanceof LoomError) return Promise.reject(read);
      ({ priority, rank, key } = read);
      if (read.signal !== undefined) {
        if (read.signal.aborted)
          return Promise.reject(scheduleAborted(read.signal, { priority, key }));
        signal = read.signal;
      }
    }
    if (this.#running < this.concurrencyMax) {
      return new Promise<T>((resolve, reject) => {
        this.#start(task, signal, resolve as (value: unknown) => void, reject);
      });
    }
    if (this.#queue.size >= this.queueDepthMax) {
      return Promise.reject(
        new LoomError(
          SchedulerErrorCode.SCHEDULER_QUEUE_FULL,
          `${this.#queue.size} tasks already wait behind ${this.#running} running ones (queueDepthMax ${this.queueDepthMax}): shed this work, retry later, or raise queueDepthMax`,
          {
            limit: 'queueDepthMax',
            queueDepthMax: this.queueDepthMax,
            waiting: this.#queue.size,
            running: this.#running,
            priority,
            key,
          },
        ),
      );
    }
    return new Promise<T>((resolve, reject) => {
      const entry: WaitingTask = {
        task,
        priority,
        rank,
        key,
        signal,
        resolve: resolve as (value: unknown) => void,
        reject,
        onAbort: undefined,
        line: undefined,
        prev: undefined,
        next: undefined,
      };
      if (signal !== neverAborts) {
        entry.onAbort = () => this.#dropAborted(entry);
        signal.addEventListener('abort', entry.onAbort, { once: true });
      }
      this.#queue.push(entry);
    });
  };

  idle(): Promise<void> {
    if (this.#running === 0 && this.#queue.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #start(
    task: Task<unknown>,
    signal: AbortSignal,
    resolve: (value: unknown) => void,
    reject: (error: unknown) => void,
  ): void {
    this.#running++;
    let result: Promise<unknown>;
    try {
      result = task(signal);
    } catch (error) {
      // No drain here: either nothing waits (a direct start) or #release's loop is draining.
      this.#running--;
      reject(error);
      this.#notifyIfIdle();
      return;
    }
    Promise.resolve(result).then(
      (value) => {
        this.#release();
        resolve(value);
      },
      (error: unknown) => {
        this.#release();
        reject(error);
      },
    );
  }

  #release(): void {
    this.#running--;
    while (this.#running < this.concurrencyMax) {
      const entry = this.#queue.shift();
      if (entry === undefined) break;
      if (entry.onAbort !== undefined) entry.signal.removeEventListener('abort', entry.onAbort);
      this.#start(entry.task, entry.signal, entry.resolve, entry.reject);
    }
    this.#notifyIfIdle();
  }

  #dropAborted(entry: WaitingTask): void {
    if (!this.#queue.remove(entry)) return;
    entry.reject(scheduleAborted(entry.signal, { priority: entry.priority, key: entry.key }));
    this.#notifyIfIdle();
  }

  #notifyIfIdle(): void {
    if (this.#idleWaiters.length === 0 || this.#running > 0 || this.#queue.size > 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
