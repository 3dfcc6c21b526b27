/**
 * The scheduler's limits and defaults, each a named constant. Breaking a limit throws a
 * `LoomError` naming it in `fields.limit`.
 */
export const SchedulerLimits = {
  /**
   * Default `queueDepthMax`: tasks one scheduler holds waiting. 100,000 closures and their
   * promises are tens of MB; a queue deeper than that is a backlog to shed, not to hold.
   */
  queueDepthMaxDefault: 100_000,
  /** Characters of a fairness `key`. Keys are map keys held while tasks wait; 200 keeps them cheap. */
  keyLengthMax: 200,
} as const;

export type SchedulerLimitName = keyof typeof SchedulerLimits;
