import { LoomError, WorkflowErrorCode } from '../../errors.js';
import type { CronFieldName } from '../parsed-cron.js';

/** Where a cron expression went wrong: the field (if one), the offending token, and why. */
export interface CronProblem {
  readonly field?: CronFieldName;
  readonly token?: string;
  readonly reason: string;
  readonly limit?: string;
}

/** The `INVALID_CRON` error for `expression`, its message naming the field and the reason. */
export function invalidCron(expression: string, problem: CronProblem): LoomError {
  return new LoomError(
    WorkflowErrorCode.INVALID_CRON,
    `invalid cron expression "${expression}": ${problem.reason}`,
    { expression, ...problem },
  );
}
