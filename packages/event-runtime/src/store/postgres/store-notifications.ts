import { ErrorCode, LoomError } from '../../errors.js';

/**
 * How a Postgres store hears of writes made by other processes: `listen` (LISTEN/NOTIFY on
 * bucketed channels, with a slow safety-net poll) or `poll` (no LISTEN, no NOTIFY: one batched
 * statement every `pollIntervalMs`, for engines without notifications; ADR 0057).
 */
export type StoreNotifications = 'listen' | 'poll';

/** Shortest `pollIntervalMs` in `poll` mode: below it the polls cost more than they save. */
export const pollIntervalMsMin = 10;

/** Longest `pollIntervalMs` in `poll` mode: a wake-up later than this is a stall, not a poll. */
export const pollIntervalMsMax = 60_000;

/** `pollIntervalMs` when `notifications: 'poll'` and none is given. */
export const pollModeIntervalMsDefault = 250;

/** `pollIntervalMs` in `listen` mode (the safety net) when none is given. */
export const listenModeIntervalMsDefault = 1_000;

/** What {@link checkNotifications} returns: the mode and the interval it polls at (0: never). */
export interface ResolvedNotifications {
  notifications: StoreNotifications;
  pollIntervalMs: number;
}

/**
 * Validates `notifications` and `pollIntervalMs` together (throws `INVALID_ARGUMENT`). In `listen`
 * mode the interval is a safety net: any non-negative integer, 0 = never. In `poll` mode it is
 * the only way a write of another process is found, so it must be between
 * {@link pollIntervalMsMin} and {@link pollIntervalMsMax}.
 */
export function checkNotifications(
  notifications: unknown,
  pollIntervalMs: unknown,
): ResolvedNotifications {
  if (notifications !== undefined && notifications !== 'listen' && notifications !== 'poll') {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `notifications must be 'listen' or 'poll', got ${JSON.stringify(notifications) ?? String(notifications)}`,
      { path: 'notifications' },
    );
  }
  const mode: StoreNotifications = notifications ?? 'listen';
  if (mode === 'listen') {
    const interval = pollIntervalMs ?? listenModeIntervalMsDefault;
    if (typeof interval !== 'number' || !Number.isSafeInteger(interval) || interval < 0) {
      throw new LoomError(
        ErrorCode.INVALID_ARGUMENT,
        `pollIntervalMs must be a non-negative integer, got ${String(interval)}`,
        { path: 'pollIntervalMs' },
      );
    }
    return { notifications: mode, pollIntervalMs: interval };
  }
  const interval = pollIntervalMs ?? pollModeIntervalMsDefault;
  if (
    typeof interval !== 'number' ||
    !Number.isSafeInteger(interval) ||
    interval < pollIntervalMsMin ||
    interval > pollIntervalMsMax
  ) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `with notifications: 'poll', pollIntervalMs is how often other processes' writes are ` +
        `looked for, so it must be an integer between pollIntervalMsMin (${pollIntervalMsMin}) ` +
        `and pollIntervalMsMax (${pollIntervalMsMax}), got ${String(interval)}`,
      {
        path: 'pollIntervalMs',
        limit:
          typeof interval === 'number' && interval > pollIntervalMsMax
            ? 'pollIntervalMsMax'
            : 'pollIntervalMsMin',
      },
    );
  }
  return { notifications: mode, pollIntervalMs: interval };
}

/**
 * The live store's share of the event store's options: in `poll` mode it polls too, at the same
 * interval (what `openPostgres` passes it).
 */
export function liveStoreNotifications(options: {
  notifications?: StoreNotifications;
  pollIntervalMs?: number;
}): { notifications?: StoreNotifications; pollIntervalMs?: number } {
  if (options.notifications !== 'poll') return {};
  return {
    notifications: 'poll',
    ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
  };
}
