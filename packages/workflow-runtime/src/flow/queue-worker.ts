import {
  type FlowKey,
  isLoomError,
  ErrorCode as KernelErrorCode,
  Limits,
  type QueueItem,
  type QueueItemOutcome,
  type QueueRate,
  type QueueStore,
} from '@loom/event-runtime';
import {
  isTransientStoreError,
  type KernelRuntime,
  retryDelayMs,
  runtimeDefaults,
} from '@loom/event-runtime/kernel';
import type { WorkflowDefinition } from './define-flow.js';
import {
  cancelRuns,
  newerOfSingleton,
  singletonPeers,
  supersededReason,
} from './singleton-cancel.js';

/** How `Runtime.enqueue` files an item besides its flow and input. */
export interface EnqueueOptions {
  /** Higher runs first; ties run in enqueue order. Default 0. */
  priority?: number;
  /** At most one unfinished item per key: a second enqueue returns the first (`duplicate`). */
  dedupeKey?: string;
  /** Items sharing a key share `partitionConcurrencyMax`. */
  partitionKey?: string;
  /** Caller-chosen id, unique in the queue forever (the execution is `queue:<queue>:<itemId>`). */
  itemId?: string;
}

/** How `Runtime.work` drains a queue. The limits are global: every worker passes the same. */
export interface WorkOptions {
  /** Items of the queue running at once across all workers. Default: unlimited. */
  concurrencyMax?: number;
  /** Items running at once per partition key across all workers. Default: unlimited. */
  partitionConcurrencyMax?: number;
  /** At most `count` items started per sliding `windowMs`, across all workers. */
  rate?: QueueRate;
  /** How often the worker looks for work when idle. Default 1,000 ms. */
  pollMs?: number;
  /** A claim this worker fails to renew for this long goes to another worker. Default 30,000 ms. */
  claimTtlMs?: number;
  /** Items this worker runs at once (its own cap, below the global one). Default 100. */
  workerConcurrencyMax?: number;
  /** The worker's name in claims. Default: the kernel's `nodeId`. */
  owner?: string;
}

/** A running queue worker. */
export interface QueueWorker {
  readonly queue: string;
  readonly owner: string;
  /** Item ids this worker is running now. */
  readonly running: ReadonlySet<string>;
  /**
   * Claims this worker handed back to the queue when its runtime shut down (items whose
   * execution had not settled: another worker claims them at once). 0 before the shutdown.
   */
  readonly handedBack: number;
  /**
   * Stop claiming new items but keep renewing the claims of the ones it runs (a worker that
   * drains: `startWorker`'s `drain()`); resolves once the claim loop has stopped. `stop()` or the
   * runtime's `shutdown()` ends the renewals.
   */
  pause(): Promise<void>;
  /**
   * Stop claiming and renewing; resolves once the loop has stopped. Executions already started
   * go on in the kernel (their items are completed when they settle, or their claims expire and
   * another worker reconciles them).
   */
  stop(): Promise<void>;
}

/** The execution id of a queue item: deterministic, so running an item twice starts it once. */
export function queueExecutionId(queue: string, itemId: string): string {
  return `queue:${queue}:${itemId}`;
}

/** What a worker needs from its Runtime. */
export interface QueueWorkerDeps {
  kernel: KernelRuntime;
  queues: QueueStore;
  lookup: (name: string, version: string | null) => WorkflowDefinition<unknown, unknown>;
  /**
   * The flows this runtime can run: a worker claims only their items and leaves the rest for a
   * worker whose runtime has them (a rolling upgrade, a placement).
   */
  runnable: () => readonly FlowKey[];
  onError: (error: unknown) => void;
}

const defaultPollMs = 1_000;
const defaultClaimTtlMs = 30_000;
const defaultWorkerConcurrencyMax = 100;

/**
 * The loop behind `Runtime.work`: claim what the limits allow, start each item as execution
 * `queue:<queue>:<itemId>` (idempotent), renew the claims every ttl/3 while they run, complete
 * each item when its execution settles, recording how (completed, failed or cancelled). An item whose execution
 * already exists (a restart, an expired claim) is reconciled: completed at once if it settled,
 * resumed here if it still runs.
 */
export class QueueWorkerLoop implements QueueWorker {
  readonly queue: string;
  readonly owner: string;
  readonly running = new Set<string>();
  private readonly deps: QueueWorkerDeps;
  private readonly options: WorkOptions;
  private readonly claimTtlMs: number;
  private stopped = false;
  private wake: (() => void) | undefined;
  private readonly loopDone: Promise<void>;
  private readonly stopRenewing: () => void;
  private renewing = false;
  /** Claimed and not completed by this worker: what `handBack` returns to the queue. */
  private readonly held = new Set<string>();
  /** `complete` calls in flight. */
  private readonly completing = new Set<Promise<void>>();
  private handingBack = false;
  /** Whether a `complete` that met a transient store error tries again (until `stop`). */
  private retrying = true;
  /** Ends the backoff of `complete` calls retrying a transient store error (on `stop`). */
  private readonly retryWakes = new Set<() => void>();
  /** Set by `poke`: look again at once instead of waiting `pollMs` (something was just added). */
  private poked = false;
  handedBack = 0;

  constructor(deps: QueueWorkerDeps, queue: string, options: WorkOptions) {
    this.deps = deps;
    this.queue = queue;
    this.options = options;
    this.owner = options.owner ?? deps.kernel.nodeId;
    this.claimTtlMs = options.claimTtlMs ?? defaultClaimTtlMs;
    // On the runtime's clock, so a test or a simulation that owns its time owns the worker's.
    this.stopRenewing = deps.kernel.clock.setRepeating(
      () => void this.renew(),
      Math.max(1, Math.floor(this.claimTtlMs / 3)),
      { keepAlive: true },
    );
    this.loopDone = this.loop();
  }

  /**
   * Claim again now rather than after `pollMs`: the runtime's `publish` calls it after adding an
   * event, so this process delivers its own events without waiting for a poll. A poke during a
   * claim makes the loop claim once more right after it.
   */
  poke(): void {
    this.poked = true;
    this.wake?.();
  }

  async pause(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loopDone;
  }

  async stop(): Promise<void> {
    this.stopRenewing();
    this.retrying = false;
    for (const wake of this.retryWakes) wake();
    this.retryWakes.clear();
    await this.pause();
  }

  /**
   * After the kernel stopped driving (the runtime's `shutdown`): lets the `complete` calls of
   * items that settled finish, then ends the claims of the items it still held (their executions
   * stopped at a barrier, or wait suspended) by renewing them for 1 ms, so another worker claims
   * them at once instead of after `claimTtlMs`. Returns how many claims it handed back.
   */
  async handBack(): Promise<number> {
    await this.stop();
    // A result that settled as the kernel stopped reaches `run` in a later turn.
    await new Promise<void>((resolve) => setImmediate(resolve));
    await Promise.all([...this.completing]);
    this.handingBack = true;
    const held = [...this.held];
    this.held.clear();
    if (held.length === 0) return 0;
    try {
      const lost = await this.deps.queues.renew(this.queue, this.owner, held, 1);
      this.handedBack = held.length - lost.length;
    } catch (error) {
      this.deps.onError(error);
    }
    return this.handedBack;
  }

  /**
   * Cancel the execution of a cancel-mode singleton's item (if it has one: a re-claim after a
   * crash, or one just started) for the newer item. The item finishes `cancelled`.
   */
  private async supersede(item: QueueItem, newer: string): Promise<QueueItemOutcome> {
    const reason = supersededReason(this.queue, newer, item.partitionKey as string);
    const executionId = queueExecutionId(this.queue, item.itemId);
    const cancelled = await this.deps.kernel.cancel(executionId, reason).catch((error: unknown) => {
      // Never started: nothing ran, the item ends cancelled.
      if (isLoomError(error, KernelErrorCode.EXECUTION_NOT_FOUND)) return true;
      throw error;
    });
    if (cancelled) return 'cancelled';
    // Already settled (its worker died after the end, before completing the item): the item
    // ends as its execution did, not as cancelled.
    return this.deps.kernel
      .attach(executionId)
      .result()
      .then(() => 'completed' as const, outcomeOf);
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      this.poked = false;
      try {
        await this.claimAndStart();
      } catch (error) {
        this.deps.onError(error);
      }
      if (this.stopped) break;
      if (this.poked) continue;
      await new Promise<void>((resolve) => {
        const cancel = this.deps.kernel.clock.setTimer(
          resolve,
          this.options.pollMs ?? defaultPollMs,
          { keepAlive: true },
        );
        this.wake = () => {
          cancel();
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  private async claimAndStart(): Promise<void> {
    // Others read this node as dead while its claim is lost: it takes no new work (ADR 0044).
    if (this.deps.kernel.claimLost) return;
    const room =
      (this.options.workerConcurrencyMax ?? defaultWorkerConcurrencyMax) - this.running.size;
    if (room <= 0) return;
    const { concurrencyMax, partitionConcurrencyMax, rate } = this.options;
    const flows = this.deps.runnable();
    const items = await this.deps.queues.claim(this.queue, {
      owner: this.owner,
      limit: Math.min(room, 1_000),
      claimTtlMs: this.claimTtlMs,
      ...(flows.length > Limits.claimFlowsMax ? {} : { flows }),
      ...(concurrencyMax === undefined ? {} : { concurrencyMax }),
      ...(partitionConcurrencyMax === undefined ? {} : { partitionConcurrencyMax }),
      ...(rate === undefined ? {} : { rate }),
    });
    for (const item of items) {
      this.held.add(item.itemId);
      if (this.stopped) continue;
      this.running.add(item.itemId);
      void this.run(item);
    }
  }

  private async run(item: QueueItem): Promise<void> {
    let settled: QueueItemOutcome | undefined;
    try {
      settled = await this.settle(item);
    } catch (error) {
      this.deps.onError(error);
    } finally {
      this.running.delete(item.itemId);
    }
    // Handed back (the runtime shut down): another worker owns the item now.
    if (settled !== undefined && !this.handingBack) {
      const completing = this.complete(item.itemId, settled);
      this.completing.add(completing);
      await completing;
      this.completing.delete(completing);
    }
    this.wake?.();
  }

  /**
   * Starts (or finds) the item's execution and waits for how it ends: undefined when the runtime
   * shut down under it. A transient store error on the way (a lost connection, a failover) is
   * retried with the kernel's backoff until it takes or the worker stops, as `complete` is: the
   * start is idempotent by execution id. Without it the item was reported and dropped, neither
   * run nor completed until its claim expired (and left waiting if every worker stopped first).
   */
  private async settle(item: QueueItem): Promise<QueueItemOutcome | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.startAndAwait(item);
      } catch (error) {
        // The runtime shut down under a retry: the item is handed back, nothing to report.
        if (attempt > 0 && isShutDown(error)) return undefined;
        if (!this.retrying || !isTransientStoreError(error)) throw error;
        this.deps.onError(error);
      }
      await this.retryPause(attempt);
    }
  }

  private async startAndAwait(item: QueueItem): Promise<QueueItemOutcome | undefined> {
    const { kernel } = this.deps;
    const flow = this.deps.lookup(item.flow, item.version);
    const executionId = queueExecutionId(this.queue, item.itemId);
    // Singleton mode 'cancel': a newer start of the key replaced this one before it began.
    const { newer, older } = await singletonPeers(this.deps.queues, item);
    if (newer !== undefined) return this.supersede(item, newer.itemId);
    // Older items of the key still unfinished: their enqueuer-side cancel never happened (the
    // enqueuing process died after writing this item) and their claims expired (their worker
    // died too), which is how this one was admitted. Their executions may still be resumed by
    // recovery elsewhere: end them now, before this run starts, so the two never overlap.
    // (Their items are completed `cancelled` by whichever worker claims them next.)
    await cancelRuns((id, reason) => kernel.cancel(id, reason), older, item.itemId);
    let handle = await kernel.start(flow, item.input as never, { executionId });
    // A newer start written between the check and the start found no execution to cancel.
    const newerNow = await newerOfSingleton(this.deps.queues, item);
    if (newerNow !== undefined) await this.supersede(item, newerNow.itemId);
    // Started before (a restart, or a claim that expired): drive it here if nobody finished it.
    if (handle.existing && (await kernel.status(executionId)) === 'running') {
      handle = await kernel.resume(executionId);
    }
    return await handle.result().then(
      () => 'completed' as const,
      (error: unknown) => {
        if (isShutDown(error)) return undefined;
        // The store, not the run: the result is not known yet (settle retries).
        if (isTransientStoreError(error)) throw error;
        return outcomeOf(error);
      },
    );
  }

  /**
   * Records how an item ended. A transient store error (a lost connection, a failover, a busy
   * database) is retried with the kernel's backoff until it takes or the worker stops: without
   * it, a settled item stayed claimed until its claim expired and another worker reconciled it,
   * and was left waiting for good if every worker stopped first. A paused worker still retries;
   * one that stops makes a last attempt, and an item still not completed stays in `held`, so
   * `handBack` returns it to the queue for another worker.
   */
  private async complete(itemId: string, outcome: QueueItemOutcome): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.deps.queues.complete(this.queue, [itemId], outcome);
        this.held.delete(itemId);
        return;
      } catch (error) {
        this.deps.onError(error);
        if (!this.retrying || !isTransientStoreError(error)) return;
      }
      await this.retryPause(attempt);
    }
  }

  /** The kernel's backoff before retry `attempt` (0-based); `stop` ends it at once. */
  private retryPause(attempt: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const cancel = this.deps.kernel.clock.setTimer(
        () => {
          this.retryWakes.delete(wake);
          resolve();
        },
        retryDelayMs(runtimeDefaults, attempt),
        { keepAlive: true },
      );
      const wake = () => {
        cancel();
        resolve();
      };
      this.retryWakes.add(wake);
    });
  }

  private async renew(): Promise<void> {
    if (this.renewing || this.running.size === 0) return;
    this.renewing = true;
    try {
      const lost = await this.deps.queues.renew(
        this.queue,
        this.owner,
        [...this.running],
        this.claimTtlMs,
      );
      // Another worker may now hold these; the execution id keeps the work single, so only stop
      // renewing them (this worker still completes them if their execution settles here).
      for (const itemId of lost) {
        this.running.delete(itemId);
        this.held.delete(itemId);
      }
    } catch (error) {
      this.deps.onError(error);
    } finally {
      this.renewing = false;
    }
  }
}

/** How an item's execution ended, from the error its result rejected with. */
function outcomeOf(error: unknown): QueueItemOutcome {
  return isLoomError(error, KernelErrorCode.EXECUTION_CANCELLED) ? 'cancelled' : 'failed';
}

function isShutDown(error: unknown): boolean {
  return (
    isLoomError(error, KernelErrorCode.RUNTIME_SHUT_DOWN) ||
    isLoomError(error, KernelErrorCode.OWNERSHIP_LOST)
  );
}
