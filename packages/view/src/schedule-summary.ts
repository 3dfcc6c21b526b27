/** A schedule that fires (its newest generation is not settled), as `view.schedules()` lists it. */
export interface ScheduleSummary {
  /** The name given to `runtime.schedule(…)`. */
  name: string;
  /** The generation that fires it now: `cron:<name>` or `cron:<name>#<n>`. */
  executionId: string;
  expression: string;
  timezone: string;
  /** The flow each occurrence runs, and its version (null: unversioned). */
  flow: string;
  version: string | null;
  /**
   * When it fires next (epoch ms): the generation's durable timer when it sleeps, else the next
   * occurrence of the expression after its last firing (or after now, before the first).
   */
  nextFireAtMs: number;
  /** Its last occurrence fired (epoch ms), or null before the first. */
  lastFiredAtMs: number | null;
  /** The run of its last fired occurrence, or null. */
  lastRunId: string | null;
}
