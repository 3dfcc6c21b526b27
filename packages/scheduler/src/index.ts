export { isLoomError, LoomError, SchedulerErrorCode, type SchedulerErrorFields } from './errors.js';
export { type SchedulerLimitName, SchedulerLimits } from './limits.js';
export {
  type ParallelLimitContext,
  type ParallelLimitFn,
  type ParallelLimitOptions,
  parallelLimit,
} from './parallel-limit.js';
export { type Priority, type ScheduleTaskOptions, schedule, type Task } from './schedule.js';
export { createScheduler, type Scheduler, type SchedulerOptions } from './scheduler.js';
export { yieldNow } from './yield-now.js';
