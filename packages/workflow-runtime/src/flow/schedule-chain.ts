import type { KernelRuntime } from '@loom/event-runtime/kernel';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import {
  type CronScheduleInput,
  type CronScheduleOutput,
  cronRunId,
  cronScheduleId,
} from './cron-schedule.js';
import type { WorkflowDefinition } from './define-flow.js';

/** What a schedule runs and when: the fields `schedule()` compares to decide if it changed. */
export type ScheduleDefinition = Pick<
  CronScheduleInput,
  'expression' | 'timezone' | 'overlap' | 'catchUp' | 'flow' | 'version' | 'input'
>;

/** Where a schedule stands, found by its name. */
export interface ScheduleDescription {
  /** The schedule's newest execution: `cron:<name>` or a later generation `cron:<name>#<n>`. */
  executionId: string;
  /** True while it fires; false once unscheduled (or cancelled, or failed). */
  active: boolean;
  /** The definition that execution runs. */
  definition: ScheduleDefinition;
}

const definitionFields = [
  'expression',
  'timezone',
  'overlap',
  'catchUp',
  'flow',
  'version',
  'input',
] as const;

/**
 * Rounds of "find the newest generation, act on it" before `schedule` / `unschedule` give up:
 * each lost round means another process (or the schedule itself) added a generation meanwhile.
 */
const chainRoundsMax = 8;
/** Generations the search for the newest one considers (2^48: never reached in practice). */
const generationsMax = 2 ** 48;

/**
 * A schedule by name: its executions form one chain `cron:<name>`, `cron:<name>#1`, … with no
 * gaps (each generation is started only once the one before it exists), whichever process
 * started them. Every operation by name acts on the newest generation, found by an exponential
 * then binary search over the ids (2 reads for a new schedule, about 2·log2(n) after n
 * generations). See ADR 0008.
 */
export class ScheduleChain {
  constructor(
    private readonly kernel: KernelRuntime,
    private readonly flow: () => WorkflowDefinition<CronScheduleInput, CronScheduleOutput>,
  ) {}

  /**
   * Make the schedule run `wanted`: nothing to do when its newest generation runs that
   * definition; otherwise cancel it (recording what changed as the reason) and start the next
   * generation with `wanted`. Also starts it again after `unschedule`. Returns the id of the
   * generation that runs `wanted`.
   *
   * Error codes: `SCHEDULE_CONTENDED`, the kernel's (`PAYLOAD_NOT_JSON`, store errors).
   */
  async schedule(wanted: CronScheduleInput): Promise<string> {
    for (let round = 0; round < chainRoundsMax; round++) {
      const generation = await this.newest(wanted.name);
      if (generation === undefined) {
        const handle = await this.start(wanted, 0, null);
        if (!handle.existing) return handle.executionId;
        continue;
      }
      const executionId = cronScheduleId(wanted.name, generation);
      const current = await this.inputOf(executionId);
      if ((await this.kernel.status(executionId)) === 'running') {
        const change = describeChange(current, wanted);
        if (change === undefined) return executionId;
        await this.kernel.cancel(executionId, `rescheduled: ${change}`);
        // Next round: a generation it started while being cancelled is stopped or replaced too.
        continue;
      }
      const handle = await this.start(
        wanted,
        generation + 1,
        await this.lastRunOf(executionId, current),
      );
      if (!handle.existing) return handle.executionId;
    }
    throw contended(wanted.name, 'schedule');
  }

  /**
   * Stop the schedule: cancel its newest generation, and any it was starting meanwhile. Runs
   * already started go on. True when it was firing.
   *
   * Error codes: `SCHEDULE_CONTENDED`, store errors.
   */
  async unschedule(name: string): Promise<boolean> {
    let stopped = false;
    for (let round = 0; round < chainRoundsMax; round++) {
      const generation = await this.newest(name);
      if (generation === undefined) return stopped;
      if (await this.kernel.cancel(cronScheduleId(name, generation), 'unscheduled')) stopped = true;
      // A generation that had fired its share may have started the next one as we cancelled it.
      if (!(await this.exists(cronScheduleId(name, generation + 1)))) return stopped;
    }
    throw contended(name, 'unschedule');
  }

  /** The schedule's newest execution and definition, or undefined if it was never scheduled. */
  async describe(name: string): Promise<ScheduleDescription | undefined> {
    const generation = await this.newest(name);
    if (generation === undefined) return undefined;
    const executionId = cronScheduleId(name, generation);
    const input = await this.inputOf(executionId);
    return {
      executionId,
      active: (await this.kernel.status(executionId)) === 'running',
      definition: pickDefinition(input),
    };
  }

  /** The newest generation of `name` in the log, or undefined if it has none. */
  private async newest(name: string): Promise<number | undefined> {
    if (!(await this.exists(cronScheduleId(name, 0)))) return undefined;
    let low = 0;
    let high = 1;
    while (high < generationsMax && (await this.exists(cronScheduleId(name, high)))) {
      low = high;
      high *= 2;
    }
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (await this.exists(cronScheduleId(name, middle))) low = middle;
      else high = middle;
    }
    return low;
  }

  private async exists(executionId: string): Promise<boolean> {
    return (await this.kernel.store.read(executionId, { limit: 1 })).length > 0;
  }

  private async inputOf(executionId: string): Promise<CronScheduleInput> {
    const [started] = await this.kernel.store.read(executionId, { limit: 1 });
    return (started?.payload as { input?: CronScheduleInput } | undefined)
      ?.input as CronScheduleInput;
  }

  /** The run of the last occurrence `executionId` fired, so overlap rules hold across generations. */
  private async lastRunOf(executionId: string, input: CronScheduleInput): Promise<string | null> {
    let lastRunId = input.lastRunId ?? null;
    for (const event of await this.kernel.store.read(executionId)) {
      if (event.type !== 'step.completed') continue;
      const { name, result } = event.payload as { name?: string; result?: unknown };
      const fired = /^fire-(\d+)$/.exec(name ?? '');
      if (fired !== null && result === true) lastRunId = cronRunId(input.name, Number(fired[1]));
    }
    return lastRunId;
  }

  private async start(
    wanted: CronScheduleInput,
    generation: number,
    lastRunId: string | null,
  ): Promise<{ executionId: string; existing: boolean }> {
    return this.kernel.start(
      this.flow(),
      { ...wanted, lastFiredAtMs: null, lastRunId, generation, continuedFrom: null },
      { executionId: cronScheduleId(wanted.name, generation) },
    );
  }
}

function pickDefinition(input: CronScheduleInput): ScheduleDefinition {
  const { expression, timezone, overlap, catchUp, flow, version } = input;
  return { expression, timezone, overlap, catchUp, flow, version, input: input.input };
}

/** What differs between the running definition and the wanted one, or undefined if nothing. */
function describeChange(current: CronScheduleInput, wanted: CronScheduleInput): string | undefined {
  const changes: string[] = [];
  for (const field of definitionFields) {
    const before = stableJson(current[field] ?? null);
    const after = stableJson(wanted[field] ?? null);
    if (before === after) continue;
    changes.push(
      field === 'input' ? 'input changed' : `${field} '${current[field]}' -> '${wanted[field]}'`,
    );
  }
  return changes.length === 0 ? undefined : changes.join(', ');
}

/** JSON with object keys sorted, so a key order that differs between boots is no change. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(
          Object.entries(item as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)),
        )
      : item,
  );
}

function contended(name: string, operation: string): LoomError {
  return new LoomError(
    WorkflowErrorCode.SCHEDULE_CONTENDED,
    `${operation}('${name}') lost ${chainRoundsMax} rounds in a row to other processes changing ` +
      'the same schedule; call it again, and give every process the same definition',
    { schedule: name, operation },
  );
}
