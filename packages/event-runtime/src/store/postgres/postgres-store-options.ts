import type { Clock } from '../../clock.js';
import { systemClock } from '../../clock.js';
import { ErrorCode, LoomError } from '../../errors.js';
import { checkNotifyBuckets } from './notify-bucket.js';
import type { PgConnectionOptions } from './pg-pool.js';
import { checkSchemaName } from './schema-name.js';
import { checkNotifications, type StoreNotifications } from './store-notifications.js';

/** How to open a {@link PostgresEventStore}. */
export interface PostgresEventStoreOptions extends PgConnectionOptions {
  /** The Postgres schema holding Loom's tables (validated identifier). Default `loom`. */
  schema?: string;
  /** Refuse every write; never create, migrate or lock anything. Default false. */
  readOnly?: boolean;
  /** Fills `at` when an envelope omits it. Default: the wall clock. */
  clock?: Clock;
  /**
   * How other processes' writes are heard of: `'listen'` (default: LISTEN/NOTIFY) or `'poll'` (no
   * LISTEN and no NOTIFY is ever sent; subscriptions and live watchers are woken by one batched
   * statement every `pollIntervalMs`), for engines without notifications (ADR 0057).
   */
  notifications?: StoreNotifications;
  /**
   * With `'listen'`: subscriptions also re-read this often, in case a notification was lost
   * (its sender died after the commit, the listener connection dropped); 0 = never; default
   * 1000. Events held back from `readAll` by another open transaction reach global
   * subscriptions without it: they are re-read (25 ms, doubling to 1 s) until none is held back.
   * With `'poll'`: how often other processes' writes are looked for, an
   * integer from `pollIntervalMsMin` (10) to `pollIntervalMsMax` (60,000); default 250.
   */
  pollIntervalMs?: number;
  /**
   * NOTIFY channels per schema (`<schema>_<bucket>`). Every process on a schema must use the same
   * value, or listeners miss writers' notifications until their next poll. Default 16.
   */
  notifyBuckets?: number;
  /** Executions whose last known event is cached for append's hash chaining. Default 10,000. */
  tailCacheEntries?: number;
  /** Called with the statement name before each pool round trip (tests, metrics). */
  onQuery?: (statementName: string) => void;
}

/** Options with defaults filled in and every value checked. */
export interface ResolvedStoreOptions {
  schema: string;
  readOnly: boolean;
  clock: Clock;
  notifications: StoreNotifications;
  pollIntervalMs: number;
  notifyBuckets: number;
  tailCacheEntries: number;
  onQuery: ((statementName: string) => void) | undefined;
}

function positiveInteger(value: number, name: string, allowZero: boolean): number {
  if (!Number.isSafeInteger(value) || value < (allowZero ? 0 : 1)) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `${name} must be a${allowZero ? ' non-negative' : ' positive'} integer, got ${String(value)}`,
      { path: name },
    );
  }
  return value;
}

/** Validates the store options (throws `INVALID_ARGUMENT`) and fills defaults. */
export function resolveStoreOptions(options: PostgresEventStoreOptions): ResolvedStoreOptions {
  return {
    schema: checkSchemaName(options.schema ?? 'loom'),
    readOnly: options.readOnly ?? false,
    clock: options.clock ?? systemClock,
    ...checkNotifications(options.notifications, options.pollIntervalMs),
    notifyBuckets: checkNotifyBuckets(options.notifyBuckets ?? 16),
    tailCacheEntries: positiveInteger(
      options.tailCacheEntries ?? 10_000,
      'tailCacheEntries',
      false,
    ),
    onQuery: options.onQuery,
  };
}
