import type { Backend } from '@loom/event-runtime';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import type { WorkflowDefinition } from './define-flow.js';
import { createRuntime, type Runtime, type RuntimeSettingsOptions } from './flow-runtime.js';
import type { QueueWorker, WorkOptions } from './queue-worker.js';

/** Options of {@link startWorker}. */
export interface WorkerOptions extends Omit<RuntimeSettingsOptions, 'flows'> {
  /** The shared database every worker opens (`openPostgres(…)`, `openSqlite(…)`). */
  backend: Backend;
  /** `drain()` closes the backend after the runtime stopped (default true). */
  closeBackend?: boolean;
  /**
   * Every flow this worker runs: started here, enqueued, resumed, woken by timers. May be empty
   * when `setup` registers the flows (an agent runtime registers its agents' flows).
   */
  flows: ReadonlyArray<WorkflowDefinition<never, unknown>>;
  /**
   * Called with the runtime once it is made, before the worker's first recovery round: register
   * what else it runs there (`createAgentRuntime({ flows: runtime, agents })`), so executions of
   * those flows left by a dead worker are taken over from the first round.
   */
  setup?: (runtime: Runtime) => void | Promise<void>;
  /** Queues whose items this worker claims and runs (`runtime.work`). Default: none. */
  queues?: readonly string[];
  /** How each queue is worked (the same for all; limits are global, see `WorkOptions`). */
  work?: WorkOptions;
  /**
   * How long `drain()` lets the executions this worker drives finish before it stops them at
   * their next barrier and hands them back. Default 30,000 ms.
   */
  drainTimeoutMs?: number;
}

/** What `drain()` did. */
export interface DrainReport {
  /** Executions this worker drove when the drain began. */
  inFlight: number;
  /** Of those, the ones that ended or suspended here before the deadline. */
  finished: number;
  /** The ones still running at the deadline: stopped at a barrier, leases released. */
  handedBack: number;
  /** Queue claims returned to their queue (items whose execution had not settled). */
  queueItemsHandedBack: number;
}

/** A running worker: see {@link startWorker}. */
export interface Worker {
  /** The runtime underneath (start, signal, enqueue, … through it). */
  readonly runtime: Runtime;
  /** This worker's node id in leases and queue claims. */
  readonly nodeId: string;
  /** The queue workers, one per queue of `queues`. */
  readonly queues: readonly QueueWorker[];
  /**
   * Stop taking work (no claims, no timer polls, no recovery rounds), let what this worker
   * drives finish until `drainTimeoutMs`, then shut the runtime down: executions still running
   * stop at their next barrier and their leases are released, queue claims of unsettled items
   * are handed back, so another worker takes both at once. Calling it again returns the same
   * report.
   */
  drain(): Promise<DrainReport>;
}

const defaultDrainTimeoutMs = 30_000;
const defaultTimerPollMs = 1_000;
const defaultRecoverEveryMs = 5_000;
/** How often `drain()` looks whether the executions it waits for are done. */
const drainCheckMs = 20;

/**
 * Start a worker: a runtime on a shared database that claims the items of its `queues`, runs
 * due timers (`timerPollMs`), resumes executions whose owner died (a recovery round at once,
 * then every `recoverEveryMs`) and drives what it started, until `drain()`. Run as many as you
 * like on one Postgres: queue claims, leases and fences keep each execution on one worker at a
 * time, and a killed worker's executions are taken over once its leases expire (`leaseTtlMs`).
 * `loom worker` (in `@loom/view`) is this behind a command line, draining on SIGTERM / SIGINT.
 *
 * Error codes: `INVALID_ARGUMENT` (no flows, a bad queue name or timeout), `createRuntime`'s,
 * store errors of the first recovery round.
 *
 * @example
 * import { defineFlow, startWorker } from '@loom/workflow-runtime';
 * import { openPostgres } from '@loom/workflow-runtime/postgres';
 *
 * const invoice = defineFlow({ name: 'invoice' }, async (ctx, input: { id: string }) =>
 *   ctx.step('bill', () => `billed ${input.id}`),
 * );
 * const backend = await openPostgres({ connectionString: 'postgres://root@127.0.0.1:5432/test', migrate: true });
 * const worker = await startWorker({ backend, flows: [invoice], queues: ['invoices'] });
 * process.once('SIGTERM', () => void worker.drain().then(() => process.exit(0)));
 */
export async function startWorker(options: WorkerOptions): Promise<Worker> {
  const {
    backend,
    closeBackend,
    flows,
    queues = [],
    work = {},
    drainTimeoutMs = defaultDrainTimeoutMs,
    timerPollMs = defaultTimerPollMs,
    recoverEveryMs = defaultRecoverEveryMs,
    setup,
    ...settings
  } = options;
  if (!Array.isArray(flows) || (flows.length === 0 && setup === undefined)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      'startWorker needs the flows it runs: pass flows: [defineFlow(…), …] (or a setup that registers them)',
      { path: 'flows' },
    );
  }
  for (const [name, ms] of [
    ['drainTimeoutMs', drainTimeoutMs],
    ['timerPollMs', timerPollMs],
    ['recoverEveryMs', recoverEveryMs],
  ] as const) {
    if (!Number.isSafeInteger(ms) || ms < 0) {
      throw new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        `${name} must be a non-negative integer of milliseconds, got ${String(ms)}`,
        { path: name, actual: ms },
      );
    }
  }
  for (const queue of queues) {
    if (typeof queue !== 'string' || queue.trim() === '') {
      throw new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        `queue names must be non-empty strings, got ${JSON.stringify(queue)}`,
        { path: 'queues', actual: queue },
      );
    }
  }
  // The worker runs the timer polls and recovery rounds itself, so that draining stops them.
  const runtime = createRuntime({
    ...settings,
    backend,
    ...(closeBackend === undefined ? {} : { closeBackend }),
    flows,
    timerPollMs: 0,
    recoverEveryMs: 0,
  });
  const report = (error: unknown) => settings.onError?.(error);
  try {
    await setup?.(runtime);
    await runtime.recover();
  } catch (error) {
    await runtime.shutdown().catch(() => undefined);
    throw error;
  }
  const pollers = [
    repeat(runtime, timerPollMs, () => runtime.wakeDue(), report),
    repeat(runtime, recoverEveryMs, () => runtime.recover(), report),
  ];
  const queueWorkers = queues.map((queue) => runtime.work(queue, work));
  // Holds the process until the runtime shuts down.
  const serving = runtime.serve();
  let drained: Promise<DrainReport> | undefined;

  const drain = async (): Promise<DrainReport> => {
    for (const stop of pollers) await stop();
    await Promise.all(queueWorkers.map((worker) => worker.pause()));
    const inFlight = runtime.activeExecutions.length;
    const deadline = Date.now() + drainTimeoutMs;
    while (runtime.activeExecutions.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, drainCheckMs));
    }
    const handedBack = runtime.activeExecutions.length;
    await runtime.shutdown();
    await serving;
    return {
      inFlight,
      finished: Math.max(0, inFlight - handedBack),
      handedBack,
      queueItemsHandedBack: queueWorkers.reduce((sum, worker) => sum + worker.handedBack, 0),
    };
  };

  return {
    runtime,
    nodeId: runtime.nodeId,
    queues: queueWorkers,
    drain: () => {
      drained ??= drain();
      return drained;
    },
  };
}

/**
 * Runs `work` every `ms` on the runtime's clock, never overlapping itself; 0 = never. The
 * returned stop waits for a round in progress.
 */
function repeat(
  runtime: Runtime,
  ms: number,
  work: () => Promise<unknown>,
  report: (error: unknown) => void,
): () => Promise<void> {
  if (ms === 0) return async () => undefined;
  let round: Promise<void> | undefined;
  const cancel = runtime.clock.setRepeating(() => {
    if (round !== undefined) return;
    round = work()
      .then(
        () => undefined,
        (error: unknown) => report(error),
      )
      .finally(() => {
        round = undefined;
      });
  }, ms);
  return async () => {
    cancel();
    await round;
  };
}
