/**
 * What a simulation injects. Store probabilities are per call; node probabilities are per
 * `chaosEveryMs` of virtual time while the workload runs. All draws come from the seed.
 */
export interface Faults {
  /** Each store call waits this long (virtual ms, drawn uniformly), there and back. */
  storeLatencyMs?: readonly [min: number, max: number];
  /** A call fails with `STORE_UNAVAILABLE` / `STORE_BUSY` before anything is written. */
  transientError?: number;
  /** A write commits, then the caller sees `STORE_UNAVAILABLE` (the acknowledgement is lost). */
  lostAck?: number;
  /**
   * The node's store connection (event, lease and queue calls alike) tears mid-call: the caller
   * sees `STORE_UNAVAILABLE` without knowing whether a write committed (the seed decides, half
   * and half; a read ran but its answer broke off, never a partial page), and every call on that
   * connection is refused with `STORE_UNAVAILABLE` until the reconnect delay (`reconnectMs`) has
   * passed in virtual time. Drawn from its own stream: at 0, a seed runs as it did without it.
   */
  tornConnection?: number;
  /** How long (virtual ms, drawn uniformly) a torn connection takes to come back. */
  reconnectMs?: readonly [min: number, max: number];
  /** A node freezes (SIGSTOP) for a drawn time, sometimes past its lease. */
  pause?: number;
  /** A node dies (SIGKILL) and a new process takes its place and runs `recover()`. */
  restart?: number;
  /** The longest pause, virtual ms. */
  pauseMsMax?: number;
  /**
   * Test-only switches that re-introduce a bug, to prove the invariants catch it:
   * `drop-acked-append` (the store acknowledges an append it never wrote) and `ignore-fence`
   * (the store drops the writer's fence epoch, so a zombie's append lands); and two of the agent
   * loop's, in the agent scenario (`@loom/agent-loop/testing`): `rerun-interrupted-tool` (a
   * non-idempotent call interrupted mid-call runs again without an approval) and
   * `forget-decisions` (a replayed turn asks the model again).
   */
  injectBug?: 'drop-acked-append' | 'ignore-fence' | 'rerun-interrupted-tool' | 'forget-decisions';
}

/** The fault mix the CI budget runs: every kind on, often enough that each seed sees several. */
export const defaultFaults: Required<Omit<Faults, 'injectBug'>> = {
  storeLatencyMs: [0, 20],
  transientError: 0.02,
  lostAck: 0.02,
  tornConnection: 0.005,
  reconnectMs: [200, 3_000],
  pause: 0.08,
  restart: 0.04,
  pauseMsMax: 8_000,
};

/** No faults at all: the workload alone, for a baseline. */
export const noFaults: Faults = {
  storeLatencyMs: [0, 0],
  transientError: 0,
  lostAck: 0,
  tornConnection: 0,
  pause: 0,
  restart: 0,
};

/** Counts of what a seed injected, by kind. */
export interface FaultCounts {
  transientErrors: number;
  lostAcks: number;
  /** Connections torn mid-call (each followed by a reconnect window). */
  tornConnections: number;
  /** Calls refused because their node's connection was still reconnecting after a tear. */
  refusedWhileReconnecting: number;
  pauses: number;
  restarts: number;
  bugs: number;
}

/** A {@link FaultCounts} with every count at 0. */
export function emptyFaultCounts(): FaultCounts {
  return {
    transientErrors: 0,
    lostAcks: 0,
    tornConnections: 0,
    refusedWhileReconnecting: 0,
    pauses: 0,
    restarts: 0,
    bugs: 0,
  };
}

/**
 * The faults a seed injected, all kinds summed (refusals while reconnecting count with their tear).
 *
 * @example
 * const report = await runSeed(7, mixedScenario);
 * console.log(`${totalFaults(report.faults)} faults, ${report.faults.tornConnections} torn`);
 */
export function totalFaults(counts: FaultCounts): number {
  return (
    counts.transientErrors +
    counts.lostAcks +
    counts.tornConnections +
    counts.pauses +
    counts.restarts
  );
}
