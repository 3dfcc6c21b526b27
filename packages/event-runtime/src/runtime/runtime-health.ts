import { ErrorCode, isLoomError, LoomError } from '../errors.js';
import type { KernelContext } from './kernel-context.js';

/** How long {@link probeHealth} waits for the store before calling it unreachable. */
export const healthTimeoutMsDefault = 5_000;

/** The execution id the store probe reads (no such execution exists; the read is one index look-up). */
const probeExecutionId = 'loom-health-probe';

/** What `runtime.health()` found: whether an orchestrator should send this node work. */
export interface RuntimeHealth {
  /**
   * True when the store answered, this node's claim on its id is not lost and the runtime is not
   * shutting down: the answer for a readiness probe.
   */
  readonly ready: boolean;
  /** Whether a read of the event store succeeded within the timeout, and if not, why. */
  readonly store: {
    readonly reachable: boolean;
    /** The store's error (`STORE_UNAVAILABLE`, …) or `STORE_TIMEOUT`-like `STORE_UNAVAILABLE`. */
    readonly error?: { readonly code: string; readonly message: string };
  };
  /**
   * This node's claim on its id (ADR 0020): `held`, `lost` (its session ended: others read this
   * node as dead until it claims again; it takes no new work meanwhile), `pending` (not claimed
   * yet: nothing started or resumed here so far) or `none` (no lease store, or leases off).
   */
  readonly nodeClaim: 'held' | 'lost' | 'pending' | 'none';
  readonly shuttingDown: boolean;
}

/** Options of `runtime.health()`. */
export interface HealthOptions {
  /** How long the store may take to answer. Default {@link healthTimeoutMsDefault}. */
  timeoutMs?: number;
}

/**
 * Reads one (absent) execution from the event store, bounded by `timeoutMs` on the runtime's
 * clock, and reports the store's reachability with the node claim's state. Never throws for a
 * store failure (that is the answer); `INVALID_ARGUMENT` for a bad `timeoutMs`.
 */
export async function probeHealth(
  kernel: KernelContext,
  options: HealthOptions = {},
): Promise<RuntimeHealth> {
  const timeoutMs = options.timeoutMs ?? healthTimeoutMsDefault;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `health timeoutMs must be a positive integer of milliseconds, got ${String(timeoutMs)}`,
      { path: 'timeoutMs', actual: String(timeoutMs) },
    );
  }
  const { presence } = kernel;
  const nodeClaim =
    presence === undefined
      ? 'none'
      : presence.lost
        ? 'lost'
        : presence.claimed
          ? 'held'
          : 'pending';
  const store = await probeStore(kernel, timeoutMs);
  const shuttingDown = kernel.shuttingDown;
  return {
    ready: store.reachable && nodeClaim !== 'lost' && !shuttingDown,
    store,
    nodeClaim,
    shuttingDown,
  };
}

async function probeStore(
  kernel: KernelContext,
  timeoutMs: number,
): Promise<RuntimeHealth['store']> {
  let cancel: (() => void) | undefined;
  const timedOut = new Promise<RuntimeHealth['store']>((resolve) => {
    cancel = kernel.clock.setTimer(
      () =>
        resolve({
          reachable: false,
          error: {
            code: ErrorCode.STORE_UNAVAILABLE,
            message: `the event store did not answer a read within ${timeoutMs} ms`,
          },
        }),
      timeoutMs,
    );
  });
  const read = kernel.store.read(probeExecutionId, { limit: 1 }).then(
    (): RuntimeHealth['store'] => ({ reachable: true }),
    (error: unknown): RuntimeHealth['store'] => ({
      reachable: false,
      error: {
        code: isLoomError(error) ? error.code : ErrorCode.STORE_FAILURE,
        message: error instanceof Error ? error.message : String(error),
      },
    }),
  );
  try {
    return await Promise.race([read, timedOut]);
  } finally {
    cancel?.();
  }
}
