import type { Clock } from '../clock.js';
import { ErrorCode, LoomError } from '../errors.js';
import type { EventStore } from '../event-store.js';
import type { LeaseStore } from '../lease-store.js';
import type { SnapshotStore } from '../snapshot-store.js';
import {
  type ResolvedRetry,
  resolveRetry,
  type StepRetryPolicy,
} from './core/step-retry-policy.js';
import type { Flow } from './flow.js';
import { groupCommitBatchDefault, groupCommitBatchMax } from './group-commit.js';
import type { StoreRetrySettings } from './store-retry.js';

/** How a runtime takes leases: not at all, before every first append, or only for long runs. */
export type LeaseMode = 'off' | 'eager' | 'lazy';

/** Options of `createKernelRuntime`. */
export interface KernelRuntimeOptions {
  store: EventStore;
  /**
   * Who drives what, and which nodes are alive. Default: the event store's own
   * (`store.defaultLeaseStore()`: SQLite and Postgres stores have one, in the same database).
   * Without any lease store (the in-memory store, decorators) the runtime takes no leases and
   * claims no node id (one process per log), and recovery can only wait for a quiet log
   * (`recoverQuietMs`).
   */
  leases?: LeaseStore;
  /** Default `lazy` when there is a lease store (given or the event store's); `off` takes none. */
  leaseMode?: LeaseMode;
  /**
   * How long a lease lasts without renewal: how long a node that stopped renewing (a host that
   * vanished, a stalled process) keeps its executions. A node that *died* is seen at once
   * instead, through its node claim. Default 30,000 ms.
   */
  leaseTtlMs?: number;
  /** Default ttl/3. */
  renewEveryMs?: number;
  /** Lazy mode: how long a fresh start drives before it takes a lease. Default ttl/3. */
  lazyGraceMs?: number;
  /**
   * Recovery resumes an unleased running execution whose starter is alive (or not known: a log
   * from before lazy starts named their node) only after its log has been quiet this long. One
   * whose starter is dead, or when no other node is alive, it resumes at once (ADR 0048).
   * Default ttl + lazyGraceMs: longer than a lazy start can go without a lease.
   */
  recoverQuietMs?: number;
  snapshots?: SnapshotStore;
  /** Checkpoint state every N events (and at settle when the tail reached N). Needs `snapshots`. */
  snapshotEvery?: number;
  clock?: Clock;
  /**
   * This node's name in leases, claimed in the lease store while the process lives (so others,
   * and this node's next incarnation, know at once when it died). Default
   * `<hostname>-<pid>-<ulid>`, new on every boot. Set it only to a name unique among live
   * processes: a second live process with the same id is reported as `NODE_ID_IN_USE` and runs
   * without the fast path. 1 to 200 characters of well-formed text (no lone surrogate, no NUL),
   * else `createKernelRuntime` throws `INVALID_ARGUMENT`.
   */
  nodeId?: string;
  /** Flows this runtime can resume by name. `start` registers its flow too. */
  flows?: ReadonlyArray<Flow<never, unknown>>;
  /** Background failures (lease renewals, snapshots) are reported here. Default: ignored. */
  onError?: (error: unknown) => void;
  /**
   * How often this node claims due suspended executions (timers, signals) and resumes them.
   * Default 1,000 ms; 0 = never (call `wakeDue()` yourself).
   */
  timerPollMs?: number;
  /**
   * Default false. When true, `start()` does not run the execution here: it writes sequence 0
   * with the execution due at once, in one append, and the first node whose timer poll
   * (`wakeDue`) sees it runs it; `start()` still resolves once sequence 0 is durable, and the
   * handle follows the execution wherever it runs. For a process that sends work and never runs
   * it (a web server in front of workers): give it `timerPollMs: 0` and `recoverEveryMs: 0` too,
   * so it takes nothing back. Children and continue-as-new successors are started by the node
   * that drives their parent, as always. `retry()` hands off the same way: it appends
   * `execution.retried` with the execution due, and needs no flow registered here.
   */
  handOffStarts?: boolean;
  /**
   * How often this node runs `recover()`, which also runs once as the runtime starts. It bounds
   * how long a dead node's executions wait: one period when its process died, a lease TTL more
   * when its host vanished, and `recoverQuietMs` + one period for an unleased execution whose
   * starter lives but no longer drives it. A round with nothing to recover costs one indexed
   * query. Default 5,000 ms; 0 = never by itself (call `recover()` yourself).
   */
  recoverEveryMs?: number;
  /**
   * A timer due within this many ms is waited for in memory instead of suspending the
   * execution. Default 1,000; 0 = always suspend.
   */
  inlineWaitMs?: number;
  /**
   * While the store is unavailable (`STORE_UNAVAILABLE`, `STORE_BUSY`), an execution whose
   * append failed is resumed from the log after this long, doubling per failed attempt, and a
   * waiting `result()` re-reads the log on the same schedule. Default 100 ms.
   */
  storeRetryDelayMs?: number;
  /** The longest wait between two such attempts. Default 5,000 ms. */
  storeRetryDelayMaxMs?: number;
  /**
   * Attempts before giving up: the execution then stays running in the log for `recover()`, and
   * `result()` rejects with the store's error. Default 100 (about 8 minutes at the defaults).
   */
  storeRetriesMax?: number;
  /**
   * The retry policy of every step that sets none (`retry` in a step's options overrides it,
   * `retry: false` turns it off). Default: no retries (one attempt).
   */
  stepRetry?: StepRetryPolicy;
  /**
   * Poison budget (ADR 0031): how many times a step's attempt may be found in flight when its
   * execution is resumed from the log (its process died, or lost the execution, while the effect
   * ran) before the step is failed with `STEP_POISONED` instead of run again. Each such resume
   * is journaled (`step.interrupted`) before the effect runs again, so the count survives the
   * crash it counts. Default 10.
   */
  stepInterruptionsMax?: number;
  /**
   * Group commit across executions (ADR 0040): the appends of every execution that reaches a
   * durability barrier in one turn of the event loop go in one write when the store can append
   * batches (SQLite: one transaction and one fsync; Postgres: one statement and one commit),
   * each execution's fence and sequence still checked on its own. `maxBatch` bounds the
   * executions per write (default 64, at most 1,000; more go in further writes of the same turn).
   * `false` sends every execution's append on its own. Default on. A store without
   * `appendBatch` (a decorator that does not forward it) appends one at a time anyway.
   */
  groupCommit?: boolean | { maxBatch?: number };
}

export interface StartOptions {
  /** Caller-chosen id: starting it again returns a handle to the existing execution. */
  executionId?: string;
}

/**
 * The options with their documented defaults applied, resolved once per runtime: every piece of
 * the kernel reads its settings here, none applies a default of its own.
 */
export interface RuntimeSettings {
  readonly leaseMode: LeaseMode;
  readonly leaseTtlMs: number;
  readonly renewEveryMs: number;
  readonly lazyGraceMs: number;
  readonly recoverQuietMs: number;
  readonly timerPollMs: number;
  readonly handOffStarts: boolean;
  readonly recoverEveryMs: number;
  readonly inlineWaitMs: number;
  /** Checkpoint every N events; undefined when the runtime takes no snapshots. */
  readonly snapshotEvery: number | undefined;
  /** Keep step results in the hot state (only snapshots need them). */
  readonly keepResults: boolean;
  /** Backoff while the store is unavailable. */
  readonly storeRetry: StoreRetrySettings;
  /** The steps' default retry policy, checked; undefined: one attempt. */
  readonly stepRetry: ResolvedRetry | undefined;
  /** Interrupted attempts a step may have before it fails with `STEP_POISONED`. */
  readonly stepInterruptionsMax: number;
  /** Executions per group-commit write; 0 when group commit is off. */
  readonly groupCommitMax: number;
}

/** The documented defaults of {@link KernelRuntimeOptions}. */
export const runtimeDefaults = {
  leaseTtlMs: 30_000,
  timerPollMs: 1_000,
  recoverEveryMs: 5_000,
  inlineWaitMs: 1_000,
  storeRetryDelayMs: 100,
  storeRetryDelayMaxMs: 5_000,
  storeRetriesMax: 100,
  stepInterruptionsMax: 10,
  groupCommitMax: groupCommitBatchDefault,
} as const;

function groupCommitMax(option: KernelRuntimeOptions['groupCommit']): number {
  if (option === false) return 0;
  if (option === undefined || option === true) return runtimeDefaults.groupCommitMax;
  if (typeof option !== 'object' || option === null) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `groupCommit must be true, false or { maxBatch }, got ${String(option)}`,
      { path: 'groupCommit', actual: String(option) },
    );
  }
  const max = option.maxBatch ?? runtimeDefaults.groupCommitMax;
  if (!Number.isSafeInteger(max) || max < 1 || max > groupCommitBatchMax) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `groupCommit.maxBatch must be an integer from 1 to ${groupCommitBatchMax}, got ${String(max)}`,
      { path: 'groupCommit.maxBatch', actual: typeof max === 'number' ? max : String(max) },
    );
  }
  return max;
}

function positive(value: number | undefined, fallback: number, name: string): number {
  const resolved = value ?? fallback;
  if (!Number.isSafeInteger(resolved) || resolved < 1) {
    throw new LoomError(ErrorCode.INVALID_ARGUMENT, `${name} must be a positive integer`, {
      path: name,
      actual: resolved,
    });
  }
  return resolved;
}

/**
 * Applies the defaults and checks the options. Throws `INVALID_ARGUMENT` (snapshotEvery, the
 * store retry settings, stepRetry, groupCommit).
 */
export function resolveSettings(options: KernelRuntimeOptions): RuntimeSettings {
  const leaseTtlMs = options.leaseTtlMs ?? runtimeDefaults.leaseTtlMs;
  const lazyGraceMs = options.lazyGraceMs ?? Math.floor(leaseTtlMs / 3);
  if (
    options.snapshotEvery !== undefined &&
    (!Number.isSafeInteger(options.snapshotEvery) || options.snapshotEvery < 1)
  ) {
    throw new LoomError(ErrorCode.INVALID_ARGUMENT, 'snapshotEvery must be a positive integer', {
      actual: options.snapshotEvery,
    });
  }
  const snapshotEvery = options.snapshots === undefined ? undefined : options.snapshotEvery;
  return {
    leaseMode: options.leases === undefined ? 'off' : (options.leaseMode ?? 'lazy'),
    leaseTtlMs,
    renewEveryMs: options.renewEveryMs ?? Math.floor(leaseTtlMs / 3),
    lazyGraceMs,
    recoverQuietMs: options.recoverQuietMs ?? leaseTtlMs + lazyGraceMs,
    timerPollMs: options.timerPollMs ?? runtimeDefaults.timerPollMs,
    handOffStarts: handOffStarts(options.handOffStarts),
    recoverEveryMs: options.recoverEveryMs ?? runtimeDefaults.recoverEveryMs,
    inlineWaitMs: options.inlineWaitMs ?? runtimeDefaults.inlineWaitMs,
    snapshotEvery,
    keepResults: snapshotEvery !== undefined,
    stepRetry: options.stepRetry === undefined ? undefined : resolveRetry(options.stepRetry),
    groupCommitMax: groupCommitMax(options.groupCommit),
    stepInterruptionsMax: positive(
      options.stepInterruptionsMax,
      runtimeDefaults.stepInterruptionsMax,
      'stepInterruptionsMax',
    ),
    storeRetry: {
      storeRetryDelayMs: positive(
        options.storeRetryDelayMs,
        runtimeDefaults.storeRetryDelayMs,
        'storeRetryDelayMs',
      ),
      storeRetryDelayMaxMs: positive(
        options.storeRetryDelayMaxMs,
        runtimeDefaults.storeRetryDelayMaxMs,
        'storeRetryDelayMaxMs',
      ),
      storeRetriesMax: positive(
        options.storeRetriesMax,
        runtimeDefaults.storeRetriesMax,
        'storeRetriesMax',
      ),
    },
  };
}

function handOffStarts(value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new LoomError(ErrorCode.INVALID_ARGUMENT, 'handOffStarts must be true or false', {
      actual: String(value),
    });
  }
  return value;
}
