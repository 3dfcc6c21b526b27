import { createHash } from 'node:crypto';
import {
  type EventStore,
  type ExecutionStatus,
  type FlowContext,
  type JsonValue,
  ErrorCode as KernelErrorCode,
  Limits,
} from '@loom/event-runtime';
import { isLoomError, LoomError, WorkflowErrorCode } from '../errors.js';
import { type Duration, parseDuration } from './duration.js';
import { cancelMatchFor, checkEventMatch, type EventMatch, eventMatches } from './event-match.js';
import { checkEventName, eventDispatchFlowName, type PublishedEvent } from './published-event.js';
import type { WorkflowDefinition } from './workflow-definition.js';

/** What `ctx.waitForEvent` gives back: the first matching event, or that the timeout passed. */
export type EventReceived<D = JsonValue> =
  | { received: true; event: PublishedEvent<D> }
  | { received: false };

/** Options of `ctx.waitForEvent`. */
export interface WaitForEventOptions {
  /** Field equality on the event, e.g. `{ 'data.orderId': 'o-7' }`. Default: any event of the name. */
  match?: EventMatch;
  /** Give up after this long: resolves `{ received: false }`. Default: wait for good. */
  timeout?: Duration;
}

/** The built-in flow whose executions are the durable registry of waits (ADR 0060). */
export const eventWaitFlowName = 'loom.event-wait';

/** The signal a delivery sends a wait with the event. */
const eventSignalName = 'loom.event';

/** What a wait execution records as its input: the event it waits for, and how long. */
interface EventWaitInput {
  event: string;
  match: EventMatch;
  timeoutMs: number | null;
}

/** How many index rows one delivery reads per page while it looks for waits or runs. */
const scanPageSize = 500;

/** Room a wait id keeps after its prefix: `#`, a base64url SHA-256 (43), `.` and an index. */
const waitSuffixLengthMax = 52;

/**
 * The id prefix of the waits for events named `name`: `loom.wait:<name>:`, or, for a name too long
 * to leave room for the wait's UUID in an execution id, a hash of it. Delivery lists the waits of
 * a name by this prefix, in the execution index.
 */
export function eventWaitPrefix(name: string): string {
  const plain = `loom.wait:${name}:`;
  if (plain.length + waitSuffixLengthMax <= Limits.executionIdLengthMax) return plain;
  return `loom.wait:#${createHash('sha256').update(name).digest('base64url')}:`;
}

/**
 * The id of the `index`th wait (0, 1, …, counted per run of the flow function, so a replay finds
 * the same ids) of execution `parent` for events named `name`: the name's prefix, then the
 * parent's id and the index, or a hash of the parent's id where it would not fit.
 */
export function eventWaitId(name: string, parent: string, index: number): string {
  const prefix = eventWaitPrefix(name);
  const plain = `${prefix}${parent}.${index}`;
  if (plain.length <= Limits.executionIdLengthMax) return plain;
  return `${prefix}#${createHash('sha256').update(parent).digest('base64url')}.${index}`;
}

/** Turns a delivered signal (or none by the timeout) into what `ctx.waitForEvent` resolves with. */
async function takeEvent(ctx: FlowContext, input: EventWaitInput): Promise<EventReceived> {
  const wait = await ctx.waitForSignal(
    eventSignalName,
    input.timeoutMs === null ? undefined : { timeoutMs: input.timeoutMs },
  );
  return wait.received
    ? { received: true, event: wait.payload as unknown as PublishedEvent }
    : { received: false };
}

/**
 * The wait flow of the release before versions (unversioned): only the signal. Registered by
 * every runtime so the waits such a node started replay and are woken here.
 */
export const legacyEventWaitFlow: WorkflowDefinition<EventWaitInput, EventReceived> = {
  name: eventWaitFlowName,
  options: { name: eventWaitFlowName },
  run: takeEvent,
};

/**
 * The version of the wait flow that catches up on events delivered before its start was in the
 * index (ADR 0060, "A wait catches up"). Executions are pinned to their version: a wait started
 * unversioned (by an older node) keeps the legacy body; a node without this version never drives
 * one of these (its timer and recovery claims are kept to the flows it registers).
 */
export const eventWaitFlowVersion = '2';

/** What a wait's catch-up needs of its runtime: the index, the logs, and a signal. */
export interface EventWaitCatchUpDeps {
  store: Pick<EventStore, 'findExecutions' | 'read'>;
  signal: EventWaitDeps['signal'];
}

/** How a catch-up is retried on a store failure: as a delivery is (1 s doubling to 30 s, 10 attempts). */
const catchUpRetry = { attempts: 10, backoff: { initialMs: 1_000, factor: 2, maxMs: 30_000 } };

/**
 * The most deliveries one catch-up reads. They are the deliveries of the name begun since the wait
 * started (the catch-up runs right after): more than this means thousands of events of one name
 * within that moment, and the wait relies on the deliveries' own scans for the rest.
 */
export const catchUpDeliveriesMax = 10_000;

/**
 * A wait's catch-up, run once its start is durable: the first matching event (earliest published,
 * then lowest id) among the name's deliveries that exist now and were published at or after the
 * wait started, signalled to the wait itself with the event's id as idempotency key, so it is the
 * same signal as the delivery's own (which finds the wait if it scanned after the start was in
 * the index). It closes the gap of a start written late with an earlier time (a store busy and
 * the write sent again): a delivery that scanned in between did not see the wait. Returns the
 * event's id, or null.
 */
export async function catchUpOnEvents(
  deps: EventWaitCatchUpDeps,
  waitId: string,
  input: EventWaitInput,
): Promise<string | null> {
  const [started] = await deps.store.read(waitId, { limit: 1 });
  if (started === undefined) return null;
  const sinceMs = started.at;
  let first: PublishedEvent | undefined;
  let cursor: string | undefined;
  for (let read = 0; read < catchUpDeliveriesMax; ) {
    const page = await deps.store.findExecutions({
      flow: eventDispatchFlowName(input.event),
      createdFromMs: sinceMs,
      limit: scanPageSize,
      ...(cursor === undefined ? {} : { afterExecutionId: cursor }),
    });
    for (const summary of page) {
      const [delivery] = await deps.store.read(summary.executionId, { limit: 1 });
      const event = (delivery?.payload as { input?: PublishedEvent } | undefined)?.input;
      if (
        event?.name !== input.event ||
        event.publishedAtMs < sinceMs ||
        !eventMatches(event, input.match)
      )
        continue;
      if (
        first === undefined ||
        event.publishedAtMs < first.publishedAtMs ||
        (event.publishedAtMs === first.publishedAtMs && event.id < first.id)
      )
        first = event;
    }
    read += page.length;
    if (page.length < scanPageSize) break;
    cursor = page.at(-1)?.executionId;
  }
  if (first === undefined) return null;
  try {
    await deps.signal(waitId, eventSignalName, first, { idempotencyKey: first.id });
  } catch (error) {
    // Settled since (cancelled with its parent): nothing to wake.
    if (!isLoomError(error, KernelErrorCode.EXECUTION_SETTLED)) throw error;
  }
  return first.id;
}

/**
 * The built-in flow of a wait, built per runtime (its catch-up reads that runtime's store): once
 * its start is durable (the step's barrier), it catches up on events already delivered
 * ({@link catchUpOnEvents}), then waits for the signal a delivery sends (the event) until the
 * timeout, and returns what `ctx.waitForEvent` resolves with. Every runtime registers it, so a
 * wait is woken by whichever node claims it. A catch-up that fails past its retries is recorded
 * and the wait goes on: deliveries that scan from then on still find it.
 */
export function eventWaitFlow(
  deps: EventWaitCatchUpDeps,
): WorkflowDefinition<EventWaitInput, EventReceived> {
  return {
    name: eventWaitFlowName,
    version: eventWaitFlowVersion,
    options: { name: eventWaitFlowName, version: eventWaitFlowVersion },
    run: async (ctx: FlowContext, input: EventWaitInput): Promise<EventReceived> => {
      try {
        await ctx.step('catch-up', () => catchUpOnEvents(deps, ctx.executionId, input), {
          retry: catchUpRetry,
        });
      } catch (error) {
        if (!isLoomError(error, KernelErrorCode.STEP_FAILED)) throw error;
      }
      return takeEvent(ctx, input);
    },
  };
}

/**
 * What `ctx.waitForEvent` starts its child with: the name and version of {@link eventWaitFlow}.
 * The kernel runs the flow its runtime registered under them (the runtime's own store); this
 * object's body only runs on a bare kernel runtime, which cannot catch up, and says so.
 */
const eventWaitFlowRef: WorkflowDefinition<EventWaitInput, EventReceived> = {
  name: eventWaitFlowName,
  version: eventWaitFlowVersion,
  options: { name: eventWaitFlowName, version: eventWaitFlowVersion },
  run: async () => {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      'ctx.waitForEvent needs a runtime made by createRuntime (it registers the wait flow that ' +
        'reads its store); this flow runs on a bare kernel runtime',
      { flow: eventWaitFlowName },
    );
  },
};

/**
 * `ctx.waitForEvent`: checks its arguments (`INVALID_ARGUMENT`), then runs the wait as a child
 * execution `loom.wait:<name>:<parent>.<n>` of {@link eventWaitFlow}. The child's start is the wait's
 * registration: durable before any event it should see is published, and found by delivery in
 * the execution index while it is unsettled. An event delivered before the child suspends lands
 * in its inbox and the wait takes it.
 */
export async function waitForEvent<D>(
  ctx: FlowContext,
  waitIndex: () => number,
  declared: readonly string[],
  flow: string,
  name: string,
  options: WaitForEventOptions = {},
): Promise<EventReceived<D>> {
  checkEventName(name, 'the event name of ctx.waitForEvent');
  if (!declared.includes(name)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow}' waits for event '${name}' but does not declare it: add it to ` +
        `defineFlow({ waitsForEvents: [...] }) so the runtimes that run this flow deliver it`,
      { flow, path: 'waitsForEvents', actual: name },
    );
  }
  if (typeof options !== 'object' || options === null) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      'the options of ctx.waitForEvent must be an object { match?, timeout? }',
      { path: 'options' },
    );
  }
  const match =
    options.match === undefined
      ? {}
      : checkEventMatch(options.match, 'the match of ctx.waitForEvent');
  const timeoutMs =
    options.timeout === undefined ? null : parseDuration(options.timeout, 'timeout');
  const input: EventWaitInput = { event: name, match, timeoutMs };
  const executionId = eventWaitId(name, ctx.executionId, waitIndex());
  return (await ctx.child(eventWaitFlowRef, input, { executionId })) as EventReceived<D>;
}

/** What waking waits and cancelling runs needs of the runtime. */
export interface EventWaitDeps {
  store: Pick<EventStore, 'findExecutions' | 'read'>;
  signal: (
    executionId: string,
    name: string,
    payload: unknown,
    options: { idempotencyKey: string },
  ) => Promise<{ duplicate: boolean }>;
  cancel: (executionId: string, reason: string) => Promise<boolean>;
}

/**
 * Unsettled executions of `flow` (ids after `after`, while `keep` accepts the id) with their
 * input, created at or before `createdAtMostMs`. Running ones first, then suspended ones: a wait
 * between its start and its suspension is seen in the first scan.
 */
async function* unsettled(
  store: EventWaitDeps['store'],
  flow: string,
  after: string | undefined,
  keep: (executionId: string) => boolean,
  createdAtMostMs: number,
): AsyncGenerator<{ executionId: string; input: unknown }> {
  for (const status of ['running', 'suspended'] satisfies ExecutionStatus[]) {
    let cursor = after;
    for (;;) {
      const page = await store.findExecutions({
        flow,
        status,
        limit: scanPageSize,
        ...(cursor === undefined ? {} : { afterExecutionId: cursor }),
      });
      let done = page.length < scanPageSize;
      for (const summary of page) {
        if (!keep(summary.executionId)) {
          done = true;
          break;
        }
        cursor = summary.executionId;
        if (summary.createdAtMs > createdAtMostMs) continue;
        const [started] = await store.read(summary.executionId, { limit: 1 });
        const payload = started?.payload as { input?: unknown } | null | undefined;
        yield { executionId: summary.executionId, input: payload?.input ?? null };
      }
      if (done) break;
    }
  }
}

/**
 * Wake every unsettled wait for `event` that started no later than it was published and whose
 * match holds: a signal to each, idempotent by the event's id, so a delivery run again wakes
 * nothing twice. Returns how many got the signal for the first time.
 */
export async function wakeWaits(deps: EventWaitDeps, event: PublishedEvent): Promise<number> {
  const prefix = eventWaitPrefix(event.name);
  let woken = 0;
  const waits = unsettled(
    deps.store,
    eventWaitFlowName,
    prefix,
    (id) => id.startsWith(prefix),
    event.publishedAtMs,
  );
  for await (const { executionId, input } of waits) {
    const wait = input as EventWaitInput | null;
    if (wait?.event !== event.name || !eventMatches(event, wait.match)) continue;
    try {
      const sent = await deps.signal(executionId, eventSignalName, event, {
        idempotencyKey: event.id,
      });
      if (!sent.duplicate) woken += 1;
    } catch (error) {
      // It settled (took an earlier event, or timed out) since the scan: nothing to wake.
      if (!isLoomError(error, KernelErrorCode.EXECUTION_SETTLED)) throw error;
    }
  }
  return woken;
}

/**
 * Cancel every unsettled execution of `flow` that started no later than `event` was published
 * and whose input matches one of the flow's `cancelOn` entries for the event's name, except the
 * runs the same event started (`startedByEvent`). Returns how many this call cancelled.
 */
export async function cancelOnEvent(
  deps: EventWaitDeps,
  flow: WorkflowDefinition<unknown, unknown>,
  event: PublishedEvent,
  startedByEvent: ReadonlySet<string> = new Set(),
): Promise<number> {
  const entries = (flow.options.cancelOn ?? []).filter((entry) => entry.event === event.name);
  if (entries.length === 0) return 0;
  let cancelled = 0;
  const runs = unsettled(deps.store, flow.name, undefined, () => true, event.publishedAtMs);
  for await (const { executionId, input } of runs) {
    // A run this event started (its trigger) is never cancelled by it, whatever the clocks say.
    if (startedByEvent.has(executionId)) continue;
    const hit = entries.some((entry) => {
      const match = cancelMatchFor(entry.match, input);
      return match !== undefined && eventMatches(event, match);
    });
    if (!hit) continue;
    const reason = `cancelled by event '${event.name}' (${event.id})`.slice(
      0,
      Limits.cancelReasonLengthMax,
    );
    if (await deps.cancel(executionId, reason)) cancelled += 1;
  }
  return cancelled;
}
