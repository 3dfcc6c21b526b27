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
  /** A node freezes (SIGSTOP) for a drawn time, sometimes past its lease. */
  pause?: number;
  /** A node dies (SIGKILL) and a new process takes its place and runs `recover()`. */
  restart?: number;
  /** The longest pause, virtual ms. */
  pauseMsMax?: number;
  /**
   * Test-only switches that re-introduce a bug, to prove the invariants catch it:
   * `drop-acked-append` (the store acknowledges an append it never wrote) and `ignore-fence`
   * (the store drops the writer's fence epoch, so a zombie's append lands).
   */
  injectBug?: 'drop-acked-append' | 'ignore-fence';
}

/** The fault mix the CI budget runs: every kind on, often enough that each seed sees several. */
export const defaultFaults: Required<Omit<Faults, 'injectBug'>> = {
  storeLatencyMs: [0, 20],
  transientError: 0.02,
  lostAck: 0.02,
  pause: 0.08,
  restart: 0.04,
  pauseMsMax: 8_000,
};

/** No faults at all: the workload alone, for a baseline. */
export const noFaults: Faults = {
  storeLatencyMs: [0, 0],
  transientError: 0,
  lostAck: 0,
  pause: 0,
  restart: 0,
};

/** Counts of what a seed injected, by kind. */
export interface FaultCounts {
  transientErrors: number;
  lostAcks: number;
  pauses: number;
  restarts: number;
  bugs: number;
}

/** A {@link FaultCounts} with every count at 0. */
export function emptyFaultCounts(): FaultCounts {
  return { transientErrors: 0, lostAcks: 0, pauses: 0, restarts: 0, bugs: 0 };
}
