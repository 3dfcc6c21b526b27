import { isLoomError } from '@loom/event-runtime';
import type { KernelRuntime } from '@loom/event-runtime/kernel';
import { nextOccurrence } from '../cron/next-occurrence.js';
import { parseCron } from '../cron/parse-cron.js';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import { defineFlow, type WorkflowDefinition } from './define-flow.js';

/** What happens when an occurrence is due while the previous run is still going. */
export type CronOverlap = 'skip' | 'queue' | 'allow';
/** What to do with occurrences missed while no node was up: none, the latest one, or all. */
export type CronCatchUp = 'none' | 'latest' | 'all';

export interface ScheduleOptions {
  /** The schedule's id (default: the flow's name). One schedule execution exists per name. */
  name?: string;
  /** IANA time zone of the expression. Default 'UTC'. */
  timezone?: string;
  /** Default 'skip'. */
  overlap?: CronOverlap;
  /** Default 'latest'. */
  catchUp?: CronCatchUp;
  /** Input of every run. Default null. */
  input?: unknown;
}

/** The input of a schedule execution (`cron:<name>`): everything it needs to fire on its own. */
export interface CronScheduleInput {
  name: string;
  expression: string;
  timezone: string;
  overlap: CronOverlap;
  catchUp: CronCatchUp;
  flow: string;
  version: string | null;
  input: unknown;
  /** The last occurrence fired (epoch ms), or null before the first. */
  lastFiredAtMs: number | null;
  /** The run of the last fired occurrence, for overlap decisions. */
  lastRunId: string | null;
  /** This execution's place in the schedule's chain: 0 is `cron:<name>`, then `cron:<name>#<n>`. */
  generation: number;
  /**
   * The generation that started this one when it had fired its share, or null when `schedule()`
   * started it. A continued generation ends at once if its predecessor was cancelled meanwhile.
   */
  continuedFrom: string | null;
}

/** How a schedule execution ended: it handed over to the next generation, or found itself stopped. */
export type CronScheduleOutput = { continuedTo: string } | { stoppedBecause: string };

/** Occurrences one schedule execution fires before it continues as new (bounds its log). */
export const cronRunsPerGeneration = 50;
/** Most missed occurrences fired by `catchUp: 'all'` after a downtime. */
export const cronCatchUpMax = 1_000;

/**
 * What a schedule needs of the runtime it fires on: where the previous run stands, waiting for
 * it, and starting the next run or generation. Handed over as it is, not looked up through a
 * closure.
 */
export type ScheduleRuntime = Pick<KernelRuntime, 'status' | 'attach' | 'start'>;

/**
 * How firing one occurrence is retried when the runtime cannot answer (a store outage): on the
 * runtime's clock, 1 s, 2 s, 4 s, 8 s apart. After that the occurrence is not fired (the failed
 * step stays in the schedule's log) and the schedule goes on to the next.
 */
const fireRetry = { attempts: 5, backoff: { initialMs: 1_000, factor: 2, maxMs: 8_000 } };

/**
 * True when the previous run is still running. A run that is not in the log (gone) is not
 * running; any other failure to tell is thrown, never guessed: guessing 'completed' would start
 * an overlapping run, guessing 'running' would skip one.
 */
async function stillRunning(runtime: ScheduleRuntime, runId: string): Promise<boolean> {
  try {
    return (await runtime.status(runId)) === 'running';
  } catch (error) {
    if (isLoomError(error, 'EXECUTION_NOT_FOUND')) return false;
    throw error;
  }
}

/**
 * The id of generation `generation` of a schedule's execution (`cron:<name>`, then
 * `cron:<name>#1`, …: dense, so the newest is found by a search over `n`).
 */
export const cronScheduleId = (name: string, generation = 0) =>
  generation === 0 ? `cron:${name}` : `cron:${name}#${generation}`;
/** The id of the run of one occurrence. */
export const cronRunId = (name: string, fireAtMs: number) => `cron:${name}:${fireAtMs}`;

/** The name of the built-in flow of schedule executions. */
export const cronScheduleFlowName = 'loom.cron.schedule';

/**
 * The flow behind every schedule: one live execution per schedule name, sleeping durably until
 * the next occurrence, then starting that occurrence's run under the id `cron:<name>:<fireAtMs>`.
 * Because the schedule is one execution (one driver at a time, fenced) and the run's id is fixed
 * by the occurrence, every occurrence fires exactly once however many processes run the
 * schedule and whoever restarts when. After `cronRunsPerGeneration` fires it starts the next
 * generation (`cron:<name>#<n+1>`) and completes, which bounds each log (ADR 0008).
 */
export function cronScheduleFlow(
  runtime: ScheduleRuntime,
  resolve: (flow: string, version: string | null) => WorkflowDefinition<unknown, unknown>,
): WorkflowDefinition<CronScheduleInput, CronScheduleOutput> {
  const flow: WorkflowDefinition<CronScheduleInput, CronScheduleOutput> = defineFlow(
    { name: cronScheduleFlowName },
    async (ctx, config: CronScheduleInput): Promise<CronScheduleOutput> => {
      const predecessor = config.continuedFrom;
      if (predecessor !== null) {
        // unschedule() or a changed definition cancelled the predecessor while it was starting this
        // generation: it must not fire (the canceller may not have seen it yet).
        const status = await ctx.step('predecessor', () => runtime.status(predecessor));
        if (status === 'cancelled') return { stoppedBecause: `${predecessor} was cancelled` };
      }
      const parsed = parseCron(config.expression);
      let { lastFiredAtMs, lastRunId } = config;
      for (let fired = 0; fired < cronRunsPerGeneration; fired++) {
        const now = ctx.now();
        let due = nextOccurrence(parsed, lastFiredAtMs ?? now, config.timezone);
        if (due <= now && config.catchUp !== 'all') {
          // Missed occurrences: fire only the latest one ('latest'), or none ('none').
          let latest = due;
          for (let skipped = 0; skipped < cronCatchUpMax; skipped++) {
            const following = nextOccurrence(parsed, latest, config.timezone);
            if (following > now) break;
            latest = following;
          }
          due = config.catchUp === 'latest' ? latest : nextOccurrence(parsed, now, config.timezone);
        }
        await ctx.sleepUntil(due);
        const runId = cronRunId(config.name, due);
        const previous = lastRunId;
        const start = await ctx
          .step(
            `fire-${due}`,
            async () => {
              if (previous !== null && config.overlap !== 'allow') {
                if (await stillRunning(runtime, previous)) {
                  if (config.overlap === 'skip') return false;
                  // 'queue': how the previous run ends does not matter, only that it did.
                  await runtime
                    .attach(previous)
                    .result()
                    .catch(() => undefined);
                }
              }
              await runtime.start(resolve(config.flow, config.version), config.input, {
                executionId: runId,
              });
              return true;
            },
            { retry: fireRetry },
          )
          .catch((error: unknown) => {
            if (isLoomError(error, 'STEP_FAILED')) return false;
            throw error;
          });
        lastFiredAtMs = due;
        if (start) lastRunId = runId;
      }
      const generation = config.generation + 1;
      const next: CronScheduleInput = {
        ...config,
        lastFiredAtMs,
        lastRunId,
        generation,
        continuedFrom: ctx.executionId,
      };
      // Not ctx.continueAsNew: its successor ids follow the chain's first execution, and a schedule
      // restarted after unschedule() must keep one dense sequence of ids by name.
      const continuedTo = await ctx.step('continue', async (): Promise<string> => {
        const handle = await runtime.start(flow, next, {
          executionId: cronScheduleId(config.name, generation),
        });
        return handle.executionId;
      });
      return { continuedTo };
    },
  );
  return flow;
}

const scheduleNamePattern = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$/;

/** Validates schedule options; throws `INVALID_CRON` / `INVALID_TIME_ZONE` / `INVALID_ARGUMENT`. */
export function scheduleInput(
  flow: WorkflowDefinition<unknown, unknown>,
  expression: string,
  options: ScheduleOptions,
): CronScheduleInput {
  const parsed = parseCron(expression);
  const timezone = options.timezone ?? 'UTC';
  // Throws INVALID_TIME_ZONE for a zone Intl does not know.
  nextOccurrence(parsed, 0, timezone);
  const overlap = options.overlap ?? 'skip';
  const catchUp = options.catchUp ?? 'latest';
  if (!['skip', 'queue', 'allow'].includes(overlap)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `overlap must be skip, queue or allow, got ${String(overlap)}`,
    );
  }
  if (!['none', 'latest', 'all'].includes(catchUp)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `catchUp must be none, latest or all, got ${String(catchUp)}`,
    );
  }
  const name = options.name ?? flow.name;
  if (typeof name !== 'string' || !scheduleNamePattern.test(name)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `a schedule name must be 1 to 200 letters, digits or . _ / - (no ':' or '#', which the ids ` +
        `of its runs and generations use), got ${JSON.stringify(name)}: pass { name }`,
      { actual: String(name) },
    );
  }
  return {
    name,
    expression,
    timezone,
    overlap,
    catchUp,
    flow: flow.name,
    version: flow.version ?? null,
    input: options.input ?? null,
    lastFiredAtMs: null,
    lastRunId: null,
    generation: 0,
    continuedFrom: null,
  };
}
