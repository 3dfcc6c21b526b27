// The `@loom/workflow-runtime/cron` entry: cron schedules only, for callers that need no flows.
export { type CronLimitName, CronLimits } from './cron/cron-limits.js';
export { nextOccurrence } from './cron/next-occurrence.js';
export { occurrences } from './cron/occurrences.js';
export { parseCron } from './cron/parse-cron.js';
export type {
  CronDaysOfMonth,
  CronDaysOfWeek,
  CronFieldName,
  CronNthWeekday,
  ParsedCron,
} from './cron/parsed-cron.js';
