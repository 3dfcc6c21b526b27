import { sleepOn } from '../clock.js';
import { ErrorCode, isLoomError } from '../errors.js';
import type { EventStore } from '../event-store.js';
import type { SnapshotStore } from '../snapshot-store.js';
import {
  type ExecutionOutcome,
  type FinalOutcome,
  outcomeOfState,
  resultOf,
  type SettledOutcome,
} from './core/execution-outcome.js';
import { foldEvent } from './core/execution-state.js';
import type { KernelContext } from './kernel-context.js';
import { loadState } from './load-state.js';
import { notFound } from './not-found.js';
import { keepAlive } from './pollers.js';
import { isTransientStoreError, retryDelayMs } from './store-retry.js';

/** A way to wait for an execution's outcome, wherever it runs. */
export interface ExecutionHandle<O = unknown> {
  readonly executionId: string;
  /** True when `start` found the execution already in the log (or already running here). */
  readonly existing: boolean;
  /**
   * The flow's output once the execution completes. Rejects with `EXECUTION_FAILED` (or the
   * kernel code the failure recorded, e.g. `NON_DETERMINISM`), `EXECUTION_CANCELLED`, or
   * `RUNTIME_SHUT_DOWN`. While the store is unavailable it keeps waiting (re-reading the log with
   * the runtime's store backoff); it rejects with `STORE_UNAVAILABLE` (or `STORE_BUSY`) only
   * once `storeRetriesMax` attempts in a row failed.
   */
  result(): Promise<O>;
}

/** Where outcomes are read: the execution's log (and its snapshots). */
export interface OutcomeLog {
  readonly store: EventStore;
  readonly snapshots: SnapshotStore | undefined;
}

/**
 * Where a handle looks for its outcome: the driver on this node, else the log; the clock keeps
 * the process alive while someone waits and times the re-reads while the store is unavailable.
 */
export type OutcomeSource = Pick<
  KernelContext,
  'store' | 'snapshots' | 'executions' | 'clock' | 'settings'
>;

/** Continue-as-new chains followed by `result()` before giving up (a runaway chain is a bug). */
const continuedHopsMax = 10_000;

/** A handle whose `result()` follows the execution (and its continue-as-new successors). */
export function createHandle<O>(
  source: OutcomeSource,
  executionId: string,
  existing: boolean,
): ExecutionHandle<O> {
  let result: Promise<O> | undefined;
  return {
    executionId,
    existing,
    result: () => {
      result ??= awaitResult<O>(source, executionId);
      return result;
    },
  };
}

/** The outcome of a settled execution (following continue-as-new), or undefined if it runs. */
export async function settledOutcome(
  log: OutcomeLog,
  executionId: string,
): Promise<ExecutionOutcome | undefined> {
  const outcome = await settledOutcomeOrMissing(log, executionId);
  return outcome === 'missing' ? undefined : outcome;
}

/**
 * {@link settledOutcome}, telling apart an execution with no log at all (`'missing'`) from one
 * that has not settled (undefined), in the same reads.
 */
export async function settledOutcomeOrMissing(
  log: OutcomeLog,
  executionId: string,
): Promise<ExecutionOutcome | undefined | 'missing'> {
  let current = executionId;
  for (let hops = 0; hops < continuedHopsMax; hops++) {
    const { state } = await loadState(log.store, log.snapshots, current);
    if (state === undefined) return hops === 0 ? 'missing' : undefined;
    const outcome = outcomeOfState(state);
    if (outcome?.status !== 'continued') return outcome;
    current = outcome.successorId;
  }
  return undefined;
}

async function awaitResult<O>(source: OutcomeSource, executionId: string): Promise<O> {
  // Someone waits for this outcome (perhaps a sleeping execution's): keep the process alive
  // until it arrives, as an open server would. The runtime's own pollers never do.
  const release = keepAlive(source.clock);
  try {
    let current = executionId;
    for (let hops = 0; ; hops++) {
      const outcome = await outcomeRiding(source, current);
      if (outcome.status !== 'continued') return resultOf(current, outcome) as O;
      if (hops >= continuedHopsMax) throw notFound(outcome.successorId);
      current = outcome.successorId;
    }
  } finally {
    release();
  }
}

/**
 * {@link outcomeOf}, asked again after a backoff while the store fails transiently: the driver
 * that stopped on the failure is resumed meanwhile (here, or by another node), so the outcome
 * comes once the store is back.
 */
async function outcomeRiding(
  source: OutcomeSource,
  executionId: string,
): Promise<FinalOutcome | ContinuedOutcome> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await outcomeOf(source, executionId);
    } catch (error) {
      if (
        !isTransientStoreError(error) ||
        attempt + 1 >= source.settings.storeRetry.storeRetriesMax
      ) {
        throw error;
      }
      await sleepOn(source.clock, retryDelayMs(source.settings.storeRetry, attempt));
    }
  }
}

/** The execution's outcome: from the local driver, else by following its log. */
async function outcomeOf(
  source: OutcomeSource,
  executionId: string,
): Promise<FinalOutcome | ContinuedOutcome> {
  const local = source.executions.driver(executionId);
  if (local !== undefined) {
    const outcome = await local.done;
    // A suspended execution, or one this node stopped driving for another reason than shutdown,
    // settles elsewhere (or later): its log says when.
    if (outcome.status === 'stopped') {
      if (isLoomError(outcome.error, ErrorCode.RUNTIME_SHUT_DOWN)) return outcome;
    } else if (outcome.status !== 'suspended') {
      return outcome;
    }
  }
  return followLog(source, executionId);
}

type ContinuedOutcome = Extract<ExecutionOutcome, { status: 'continued' }>;

/** Waits for the execution's terminal event in the log, wherever it is driven. */
async function followLog(log: OutcomeLog, executionId: string): Promise<SettledOutcome> {
  const { state } = await loadState(log.store, log.snapshots, executionId);
  if (state === undefined) throw notFound(executionId);
  const settledNow = outcomeOfState(state);
  if (settledNow !== undefined) return settledNow;
  return new Promise<SettledOutcome>((resolve, reject) => {
    const subscription = log.store.subscribe(
      {
        executionId,
        fromSequence: state.nextSequence,
        onError: reject,
      },
      (events) => {
        for (const event of events) foldEvent(state, event);
        const outcome = outcomeOfState(state);
        if (outcome !== undefined) {
          void subscription.close();
          resolve(outcome);
        }
      },
    );
  });
}
