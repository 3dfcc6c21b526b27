/**
 * The cron module's limits. Each one is a named constant; breaking one throws a typed error
 * that names it (`fields.limit`), so a caller can tell which.
 */
export const CronLimits = {
  /**
   * Years `nextOccurrence` searches ahead before it throws `CRON_NEVER_FIRES`. The Gregorian
   * calendar repeats exactly every 400 years (146,097 days, a whole number of weeks), so a
   * schedule with no match in 400 years has none ever; the rarest schedules that do fire
   * (a weekday of Feb 29, such as `0 0 * 2 MON#5`) are up to 40 years apart.
   */
  searchYearsMax: 400,
  /** Characters of one cron expression. Real schedules are under 100; this bounds parsing work. */
  expressionLengthMax: 1024,
  /** Expressions given as text whose parsed form is cached, so a string on every tick parses once. */
  expressionCacheMax: 256,
  /** Fire times one `occurrences` call returns. Bounds the array and the call's time. */
  occurrencesCountMax: 10_000,
  /** Time-zone formatters kept for reuse (one per zone; IANA has about 600 names). */
  timeZoneCacheMax: 1024,
  /** Earliest `after` accepted: 0001-01-01T00:00:00Z. */
  afterMsMin: -62_135_596_800_000,
  /** Latest `after` accepted: 9999-12-31T23:59:59.999Z. Fire times may fall after it. */
  afterMsMax: 253_402_300_799_999,
} as const;

/** The name of one of the {@link CronLimits}. */
export type CronLimitName = keyof typeof CronLimits;
