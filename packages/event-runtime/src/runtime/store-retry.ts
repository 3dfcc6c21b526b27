import { ErrorCode, isLoomError } from '../errors.js';

/** How the runtime backs off while its store is unavailable (see `KernelRuntimeOptions`). */
export interface StoreRetrySettings {
  /** The first wait; doubles per attempt. */
  readonly storeRetryDelayMs: number;
  /** The longest wait between two attempts. */
  readonly storeRetryDelayMaxMs: number;
  /** Attempts before giving up (the execution is then left to `recover()`). */
  readonly storeRetriesMax: number;
}

/**
 * True for the store failures that may heal by themselves: the connection was lost or could not
 * be made (`STORE_UNAVAILABLE`: restart, failover, network), or the database was locked past
 * its timeout (`STORE_BUSY`: SQLITE_BUSY, a Postgres deadlock or serialization failure), or
 * the disk was full (`STORE_FULL`: an operator frees space, and nothing of the write was stored).
 */
export function isTransientStoreError(error: unknown): boolean {
  return (
    isLoomError(error, ErrorCode.STORE_UNAVAILABLE) ||
    isLoomError(error, ErrorCode.STORE_BUSY) ||
    isLoomError(error, ErrorCode.STORE_FULL)
  );
}

/** The wait before attempt `attempt` (0-based): exponential, capped. */
export function retryDelayMs(settings: StoreRetrySettings, attempt: number): number {
  return Math.min(settings.storeRetryDelayMaxMs, settings.storeRetryDelayMs * 2 ** attempt);
}
