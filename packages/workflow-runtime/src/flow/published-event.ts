import { randomUUID } from 'node:crypto';
import { type JsonValue, Limits } from '@loom/event-runtime';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import { checkCancelMatch } from './event-match.js';
import { flowScopedKey } from './flow-key.js';

/**
 * An event as a triggered flow receives it (its input): what `runtime.publish` was given, with
 * the id (minted when the publisher gave none) and the publisher's clock at publish time.
 */
export interface PublishedEvent<D = JsonValue> {
  /** The event's type, e.g. `shop/order.placed`: flows declare `trigger: { event }` on it. */
  name: string;
  /** Unique among every event published on the backend: a second publish of it is a no-op. */
  id: string;
  /** The payload (JSON). */
  data: D;
  /** Epoch ms of the publisher's clock when it was published. */
  publishedAtMs: number;
}

/** What `runtime.publish` takes. */
export interface PublishEventInput<D = JsonValue> {
  /** The event's type: 1 to {@link eventNameLengthMax} letters, digits or `. _ : / -`. */
  name: string;
  /** The payload: JSON, at most `Limits.payloadBytesMax` once stored. Default null. */
  data?: D;
  /**
   * The event's id, for deduplication: publishing an id again (any name) writes nothing and
   * starts nothing, forever. 1 to `Limits.queueItemIdLengthMax` characters. Default: a UUID.
   */
  id?: string;
}

/** What `runtime.publish` did: the event's id, and whether it had been published before. */
export interface PublishResult {
  id: string;
  duplicate: boolean;
}

/** The queue published events wait in until a runtime with a flow triggered by them takes them. */
export const eventsQueue = 'loom.events';

/** The longest event name (the dispatch flow's name adds `loom.event:` to it). */
export const eventNameLengthMax = 180;

const eventNamePattern = new RegExp(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,${eventNameLengthMax - 1}}$`);

/** The name of the built-in flow that delivers events of `eventName` (one per name). */
export const eventDispatchFlowName = (eventName: string) => `loom.event:${eventName}`;

/**
 * The version of the delivery flow `loom.event:<name>` that `publish` writes on each event, so
 * that only a runtime registering that version delivers it (ADR 0060, "Versioned delivery"). A
 * queue worker claims only the items of flow versions its runtime registers: a node of an older
 * release, whose delivery is unversioned, leaves these events to nodes that know what this
 * delivery does. Bump it whenever a delivery does something an older one does not.
 */
export const eventDeliveryVersion = '2';

/**
 * The execution id of the run of `flow` that an event starts: `event:<len>:<flow>:<key>`, where
 * `len` is the flow name's length and the key is the trigger's `idempotency(event)` or else the
 * event's id. Fixed by the event, so delivering it twice (a crash, a duplicate with the same key)
 * starts one run; the length keeps flow `a` with key `b:c` apart from flow `a:b` with key `c`.
 */
export const eventRunId = (flow: string, key: string) => `event:${flowScopedKey(flow, key)}`;

/**
 * The id an event's run had before {@link eventRunId} (`event:<flow>:<key>`, ambiguous when a
 * flow's name has ':'): what deliveries of unversioned events (published by nodes of an older
 * release) still start, so an old node and a new one delivering them agree on it.
 */
export const legacyEventRunId = (flow: string, key: string) => `event:${flow}:${key}`;

/** Throws `INVALID_ARGUMENT` unless `name` is a valid event name; `path` names the option. */
export function checkEventName(name: unknown, path: string): string {
  if (typeof name !== 'string' || !eventNamePattern.test(name)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `${path} must be an event name of 1 to ${eventNameLengthMax} letters, digits or . _ : / - ` +
        `(starting with a letter or digit), got ${JSON.stringify(name) ?? String(name)}`,
      { path, actual: typeof name === 'string' ? name : typeof name },
    );
  }
  return name;
}

/** A `trigger` option of `defineFlow`: `{ event, if?, idempotency? }`, else `INVALID_ARGUMENT`. */
export function checkTrigger(flow: string, trigger: unknown): void {
  if (typeof trigger !== 'object' || trigger === null) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow}': trigger must be an object { event, if?, idempotency? }`,
      { flow, path: 'trigger' },
    );
  }
  const { event, if: filter, idempotency } = trigger as Record<string, unknown>;
  checkEventName(event, `trigger.event of flow '${flow}'`);
  for (const [path, value] of [
    ['trigger.if', filter],
    ['trigger.idempotency', idempotency],
  ] as const) {
    if (value !== undefined && typeof value !== 'function') {
      throw new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        `flow '${flow}': ${path} must be a function of the event, got ${typeof value}`,
        { flow, path, actual: typeof value },
      );
    }
  }
}

/** The most event names one flow may list in `waitsForEvents` or `cancelOn`. */
export const flowEventNamesMax = 32;

function checkList(flow: string, path: string, list: unknown): unknown[] {
  if (!Array.isArray(list) || list.length > flowEventNamesMax) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow}': ${path} must be an array of at most ${flowEventNamesMax} entries`,
      { flow, path, actual: Array.isArray(list) ? list.length : typeof list },
    );
  }
  return list;
}

/** A `waitsForEvents` option: event names, else `INVALID_ARGUMENT`. Returns the names. */
export function checkWaitsForEvents(flow: string, names: unknown): readonly string[] {
  if (names === undefined) return [];
  return checkList(flow, 'waitsForEvents', names).map((name, index) =>
    checkEventName(name, `waitsForEvents[${index}] of flow '${flow}'`),
  );
}

/** A `cancelOn` option: `[{ event, match? }]`, else `INVALID_ARGUMENT` naming the entry. */
export function checkCancelOn(flow: string, cancelOn: unknown): void {
  checkList(flow, 'cancelOn', cancelOn).forEach((entry, index) => {
    const path = `cancelOn[${index}] of flow '${flow}'`;
    if (typeof entry !== 'object' || entry === null) {
      throw new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        `${path} must be an object { event, match? }`,
        { flow, path: 'cancelOn' },
      );
    }
    const { event, match } = entry as Record<string, unknown>;
    checkEventName(event, `${path}.event`);
    if (match !== undefined) checkCancelMatch(match, `${path}.match`);
  });
}

/**
 * The event `runtime.publish` stores, checked: a valid name, an id of the queue's item id
 * length. Throws `INVALID_ARGUMENT` naming the bad field (the payload's JSON-ness is the queue
 * store's `PAYLOAD_NOT_JSON`).
 */
export function publishedEvent(input: PublishEventInput<unknown>, nowMs: number): PublishedEvent {
  if (typeof input !== 'object' || input === null) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      'publish needs an event { name, data?, id? }',
      { path: 'event' },
    );
  }
  const name = checkEventName(input.name, 'the event name');
  const id = input.id ?? randomUUID();
  if (typeof id !== 'string' || id.length === 0 || id.length > Limits.queueItemIdLengthMax) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `an event id must be a string of 1 to ${Limits.queueItemIdLengthMax} characters, got ` +
        `${typeof id === 'string' ? `${id.length} characters` : typeof id}`,
      { path: 'id', actual: typeof id === 'string' ? id.length : typeof id },
    );
  }
  return { name, id, data: (input.data ?? null) as JsonValue, publishedAtMs: nowMs };
}
