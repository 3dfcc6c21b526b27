import { Limits } from '@loom/event-runtime';
import type { KernelRuntime } from '@loom/event-runtime/kernel';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import { defineFlow } from './define-flow.js';
import { cancelOnEvent, type EventWaitDeps, wakeWaits } from './event-wait.js';
import {
  eventDispatchFlowName,
  eventRunId,
  legacyEventRunId,
  type PublishedEvent,
} from './published-event.js';
import { validate } from './standard-schema.js';
import type { WorkflowContext } from './workflow-context.js';
import type { FlowTrigger, WorkflowDefinition } from './workflow-definition.js';

/** What delivering one event did for one flow triggered by its name. */
export type EventDelivery =
  | { flow: string; executionId: string; existing: boolean }
  | { flow: string; skipped: 'filter' }
  | { flow: string; refused: string }
  /** Runs of `flow` this delivery cancelled (its `cancelOn`). */
  | { flow: string; cancelled: number }
  /** Waits (`ctx.waitForEvent`) this delivery woke. */
  | { waitsWoken: number };

/** What the dispatch flow needs of its runtime: the flows triggered by a name, and a start. */
export interface EventDispatchDeps {
  kernel: Pick<KernelRuntime, 'start'>;
  /** The flows of this runtime (registered and placeable here) whose trigger is `eventName`. */
  subscribers: (eventName: string) => ReadonlyArray<WorkflowDefinition<unknown, unknown>>;
  /** The flows of this runtime (registered and placeable here) with a `cancelOn` for `eventName`. */
  cancellable: (eventName: string) => ReadonlyArray<WorkflowDefinition<unknown, unknown>>;
  /** The index reads, signal and cancel that wake waits and cancel runs. */
  waits: EventWaitDeps;
  onError: (error: unknown) => void;
}

/**
 * How delivering an event is retried when a start fails (a store outage): durably, on the
 * runtime's clock, 1 s then doubling up to 30 s, 10 attempts (about 4 minutes). The starts already
 * made are idempotent, so an attempt only starts what is missing. After the last the delivery
 * execution fails (its queue item is counted `failed`); `runtime.retry(id)` delivers it again.
 */
const deliverRetry = { attempts: 10, backoff: { initialMs: 1_000, factor: 2, maxMs: 30_000 } };

/**
 * The built-in flow that delivers events of one name, in one version: `eventDeliveryVersion` for
 * the events `publish` writes now, `null` for unversioned ones (published by a node of an older
 * release). The queue worker of `loom.events` runs each event as its execution
 * (`queue:loom.events:<id>`), and its one step starts every flow of this runtime triggered by the
 * name whose `if` accepts the event (under `eventRunId`, or for an unversioned event the
 * `legacyEventRunId` older nodes use), cancels the matching runs of its flows with a `cancelOn`
 * for the name, and wakes every matching wait (`ctx.waitForEvent`, whichever runtime registered
 * it). The step is at-least-once and each start idempotent by its id, so a crash anywhere in it
 * starts each run once; its result (recorded in the log) says what was started, skipped or
 * refused. An execution is pinned to its version: one begun under a version resumes under it.
 */
export function eventDispatchFlow(
  eventName: string,
  deps: EventDispatchDeps,
  version: string | null,
): WorkflowDefinition<PublishedEvent, EventDelivery[]> {
  // The result is JSON by construction; checking PublishedEvent's JsonValue data against Json<>
  // is too deep for the compiler, so the function is typed by hand.
  const run = async (ctx: WorkflowContext, event: PublishedEvent): Promise<EventDelivery[]> =>
    ctx.step(
      'deliver',
      async () => {
        const deliveries: EventDelivery[] = [];
        for (const flow of deps.subscribers(event.name)) {
          deliveries.push(await deliverTo(flow, event, deps, version));
        }
        // Runs this event started (now, or by an earlier attempt of this step): never cancelled
        // by it, even when a flow both triggers and cancels on the name and the start's time
        // equals the event's (a clock's millisecond, or hosts' clocks apart).
        const started = new Set<string>();
        for (const delivery of deliveries)
          if ('executionId' in delivery) started.add(delivery.executionId);
        for (const flow of deps.cancellable(event.name)) {
          deliveries.push({
            flow: flow.name,
            cancelled: await cancelOnEvent(deps.waits, flow, event, started),
          });
        }
        const waitsWoken = await wakeWaits(deps.waits, event);
        if (waitsWoken > 0) deliveries.push({ waitsWoken });
        return deliveries as never;
      },
      { retry: deliverRetry },
    );
  return defineFlow<PublishedEvent, EventDelivery[]>(
    {
      name: eventDispatchFlowName(eventName),
      ...(version === null ? {} : { version }),
    },
    run as never,
  );
}

/**
 * Whether `executionId` is a run of `flow` already: the other id form's run, started for the same
 * key by a delivery of the other version (during a rolling deploy). The flow is compared because a
 * legacy id is ambiguous across flows whose names contain ':'.
 */
async function runOf(deps: EventDispatchDeps, executionId: string, flow: string): Promise<boolean> {
  const [started] = await deps.waits.store.read(executionId, { limit: 1 });
  return (started?.payload as { flow?: unknown } | undefined)?.flow === flow;
}

async function deliverTo(
  flow: WorkflowDefinition<unknown, unknown>,
  event: PublishedEvent,
  deps: EventDispatchDeps,
  version: string | null,
): Promise<EventDelivery> {
  const trigger = flow.options.trigger as FlowTrigger<PublishedEvent> | undefined;
  // A user's function that throws refuses this flow's run, never the other flows' of the event.
  const refuse = (why: string, error?: unknown): EventDelivery => {
    const refused = `flow '${flow.name}' not started for event ${event.id}: ${why}`;
    deps.onError(
      new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        refused,
        { flow: flow.name, eventId: event.id },
        error,
      ),
    );
    return { flow: flow.name, refused };
  };
  try {
    if (trigger?.if !== undefined && !trigger.if(event))
      return { flow: flow.name, skipped: 'filter' };
  } catch (error) {
    return refuse(`its trigger.if threw: ${String(error)}`, error);
  }
  let key: unknown;
  try {
    key = trigger?.idempotency === undefined ? event.id : trigger.idempotency(event);
  } catch (error) {
    return refuse(`its trigger.idempotency threw: ${String(error)}`, error);
  }
  if (typeof key !== 'string' || key.length === 0) {
    return refuse(
      `its trigger.idempotency must return a non-empty string, got ${typeof key === 'string' ? "''" : typeof key}`,
    );
  }
  let input: unknown = event;
  if (flow.options.input !== undefined) {
    const checked = await validate(flow.options.input, event);
    if (!checked.ok) return refuse(`its input schema refused the event: ${checked.message}`);
    input = checked.value;
  }
  // An unversioned event may also be delivered by an old node, which starts the legacy id: a new
  // node delivering it starts the same one. Each version looks for the other form's run first, so
  // one key's events published on both sides of a deploy start one run (unless an old node
  // delivers after a new one: it cannot look).
  const [executionId, other] =
    version === null
      ? [legacyEventRunId(flow.name, key), eventRunId(flow.name, key)]
      : [eventRunId(flow.name, key), legacyEventRunId(flow.name, key)];
  // An id of the other form over the limit names no run: the length prefix makes the new form the
  // longer, so a legacy id that fits (what an older node started) may have a new form that does not.
  if (other.length <= Limits.executionIdLengthMax && (await runOf(deps, other, flow.name))) {
    return { flow: flow.name, executionId: other, existing: true };
  }
  // The key is the user's: an id over the limit refuses this flow, never the event's other flows
  // (the store would refuse it on every attempt of the step).
  if (executionId.length > Limits.executionIdLengthMax) {
    return refuse(
      `its run id is ${executionId.length} characters, over executionIdLengthMax ` +
        `(${Limits.executionIdLengthMax}): shorten what its trigger.idempotency returns`,
    );
  }
  const handle = await deps.kernel.start(flow, input, { executionId });
  return { flow: flow.name, executionId, existing: handle.existing === true };
}
