import type { FlowKey, JsonValue } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { type LimitName, Limits } from '../limits.js';
import type {
  ClaimOptions,
  EnqueueInput,
  ListQueuesOptions,
  QueueItemOutcome,
} from '../queue-store.js';
import { claimFlows } from './claim-due-arguments.js';
import { encodePayload } from './json-codec.js';
import { checkLeaseOwner, leaseExpiry } from './lease-input.js';
import { mintId } from './mint-id.js';
import { checkWellFormed } from './well-formed-text.js';

/** Characters of a flow name or version in a queue item (the kernel's flow-name bound). */
const flowNameLengthMax = 200;

function argument(message: string, fields: Record<string, unknown>): never {
  throw new LoomError(ErrorCode.INVALID_ARGUMENT, message, fields);
}

function tooLong(path: string, length: number, limit: LimitName): never {
  throw new LoomError(
    ErrorCode.LIMIT_EXCEEDED,
    `${path} is ${length} characters, over ${limit} (${Limits[limit]})`,
    { limit, path, actual: length },
  );
}

/**
 * A non-empty string of at most `Limits[limit]` characters without a lone surrogate or NUL:
 * INVALID_ARGUMENT / LIMIT_EXCEEDED.
 */
function checkName(value: unknown, path: string, limit: LimitName): string {
  if (typeof value !== 'string' || value.length === 0) {
    argument(
      `${path} must be a non-empty string, got ${typeof value === 'string' ? "''" : typeof value}`,
      {
        path,
      },
    );
  }
  if (value.length > Limits[limit]) tooLong(path, value.length, limit);
  return checkWellFormed(value, path, ErrorCode.INVALID_ARGUMENT);
}

function positiveInteger(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    argument(`${path} must be a positive integer, got ${String(value)}`, { path, actual: value });
  }
  return value;
}

/** Validates a queue name. */
export function checkQueueName(queue: unknown): string {
  return checkName(queue, 'queue', 'queueNameLengthMax');
}

/** Validates a partition key (INVALID_ARGUMENT / LIMIT_EXCEEDED). */
export function checkPartitionKey(partitionKey: unknown): string {
  return checkName(partitionKey, 'partitionKey', 'queueKeyLengthMax');
}

/** Validates a queue item id. */
export function checkQueueItemId(itemId: unknown): string {
  return checkName(itemId, 'itemId', 'queueItemIdLengthMax');
}

/** An enqueue, validated and encoded: what a backend writes. */
export interface PreparedEnqueue {
  queue: string;
  itemId: string;
  flow: string;
  version: string | null;
  inputText: string;
  priority: number;
  dedupeKey: string | null;
  partitionKey: string | null;
  partitionConcurrencyMax: number | null;
  throttleKey: string | null;
  throttleCount: number | null;
  throttleWindowMs: number | null;
  idempotencyKey: string | null;
  idempotencyWindowMs: number | null;
  debounceKey: string | null;
  debouncePeriodMs: number | null;
  /** Null without `maxWaitMs`: the due time is pushed without a cap. */
  debounceMaxWaitMs: number | null;
}

/**
 * Validates everything of an enqueue before anything is written and encodes the input.
 * Throws `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `PAYLOAD_NOT_JSON`.
 */
export function prepareEnqueue(input: EnqueueInput): PreparedEnqueue {
  if (typeof input !== 'object' || input === null) {
    argument(`enqueue needs an object, got ${input === null ? 'null' : typeof input}`, {});
  }
  const queue = checkQueueName(input.queue);
  const itemId = input.itemId === undefined ? mintId() : checkQueueItemId(input.itemId);
  if (
    typeof input.flow !== 'string' ||
    input.flow.length === 0 ||
    input.flow.length > flowNameLengthMax
  ) {
    argument(`flow must be a flow name of 1 to ${flowNameLengthMax} characters`, { path: 'flow' });
  }
  checkWellFormed(input.flow, 'flow', ErrorCode.INVALID_ARGUMENT);
  const version = input.version ?? null;
  if (
    version !== null &&
    (typeof version !== 'string' || version.length === 0 || version.length > flowNameLengthMax)
  ) {
    argument(`version must be null or a string of 1 to ${flowNameLengthMax} characters`, {
      path: 'version',
    });
  }
  if (version !== null) checkWellFormed(version, 'version', ErrorCode.INVALID_ARGUMENT);
  const priority = input.priority ?? 0;
  if (typeof priority !== 'number' || !Number.isSafeInteger(priority)) {
    argument(`priority must be an integer, got ${String(priority)}`, {
      path: 'priority',
      actual: priority,
    });
  }
  if (Math.abs(priority) > Limits.queuePriorityMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `priority ${priority} is outside ±queuePriorityMax (${Limits.queuePriorityMax})`,
      { limit: 'queuePriorityMax', path: 'priority', actual: priority },
    );
  }
  const dedupeKey =
    input.dedupeKey === undefined
      ? null
      : checkName(input.dedupeKey, 'dedupeKey', 'queueKeyLengthMax');
  const partitionKey =
    input.partitionKey === undefined
      ? null
      : checkName(input.partitionKey, 'partitionKey', 'queueKeyLengthMax');
  const partitionConcurrencyMax =
    input.partitionConcurrencyMax === undefined
      ? null
      : positiveInteger(input.partitionConcurrencyMax, 'partitionConcurrencyMax');
  if (partitionConcurrencyMax !== null && partitionKey === null) {
    argument('partitionConcurrencyMax needs a partitionKey: the limit is per partition', {
      path: 'partitionConcurrencyMax',
    });
  }
  const throttle = prepareThrottle(input.throttle);
  const idempotency = prepareIdempotency(input.idempotency);
  const debounce = prepareDebounce(input.debounce);
  if (
    debounce.debounceKey !== null &&
    (dedupeKey !== null || idempotency.idempotencyKey !== null)
  ) {
    argument(
      'debounce cannot be combined with dedupeKey or idempotency: a debounced enqueue of a ' +
        'pending key replaces that item, where those answer it unchanged',
      { path: 'debounce' },
    );
  }
  const inputText = encodePayload(input.input === undefined ? null : (input.input as JsonValue));
  const bytes = Buffer.byteLength(inputText, 'utf8');
  if (bytes > Limits.payloadBytesMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `the input of queue item ${itemId} is ${bytes} bytes of JSON, over payloadBytesMax ` +
        `(${Limits.payloadBytesMax}): enqueue a reference to the data instead`,
      { limit: 'payloadBytesMax', actual: bytes },
    );
  }
  return {
    queue,
    itemId,
    flow: input.flow,
    version,
    inputText,
    priority,
    dedupeKey,
    partitionKey,
    partitionConcurrencyMax,
    ...throttle,
    ...idempotency,
    ...debounce,
  };
}

/** Validates an item's debounce: `{ key, periodMs, maxWaitMs? }` or absent. */
function prepareDebounce(
  debounce: unknown,
): Pick<PreparedEnqueue, 'debounceKey' | 'debouncePeriodMs' | 'debounceMaxWaitMs'> {
  if (debounce === undefined) {
    return { debounceKey: null, debouncePeriodMs: null, debounceMaxWaitMs: null };
  }
  if (typeof debounce !== 'object' || debounce === null) {
    argument('debounce must be { key, periodMs, maxWaitMs? }', { path: 'debounce' });
  }
  const { key, periodMs, maxWaitMs } = debounce as {
    key?: unknown;
    periodMs?: unknown;
    maxWaitMs?: unknown;
  };
  const debounceKey = checkName(key, 'debounce.key', 'queueKeyLengthMax');
  const debouncePeriodMs = windowOf(periodMs, 'debounce.periodMs');
  const debounceMaxWaitMs =
    maxWaitMs === undefined ? null : windowOf(maxWaitMs, 'debounce.maxWaitMs');
  if (debounceMaxWaitMs !== null && debounceMaxWaitMs < debouncePeriodMs) {
    argument(
      `debounce.maxWaitMs (${debounceMaxWaitMs}) must be at least debounce.periodMs ` +
        `(${debouncePeriodMs})`,
      { path: 'debounce.maxWaitMs', actual: debounceMaxWaitMs },
    );
  }
  return { debounceKey, debouncePeriodMs, debounceMaxWaitMs };
}

/** A positive integer of at most `queueThrottleWindowMsMax` ms: INVALID_ARGUMENT / LIMIT_EXCEEDED. */
function windowOf(value: unknown, path: string): number {
  const ms = positiveInteger(value, path);
  if (ms > Limits.queueThrottleWindowMsMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `${path} ${ms} is over queueThrottleWindowMsMax (${Limits.queueThrottleWindowMsMax})`,
      { limit: 'queueThrottleWindowMsMax', path, actual: ms },
    );
  }
  return ms;
}

/**
 * The due time of a debounced enqueue at `nowMs`: `now + periodMs`, but never past the item's
 * deadline (its first enqueue + `maxWaitMs`). The memory store's twin of the SQL of the others.
 */
export function debounceDueAt(nowMs: number, periodMs: number, deadlineMs: number | null): number {
  return deadlineMs === null ? nowMs + periodMs : Math.min(nowMs + periodMs, deadlineMs);
}

/** Validates an item's dedupe window: `{ key, windowMs }` or absent. */
function prepareIdempotency(
  idempotency: unknown,
): Pick<PreparedEnqueue, 'idempotencyKey' | 'idempotencyWindowMs'> {
  if (idempotency === undefined) return { idempotencyKey: null, idempotencyWindowMs: null };
  if (typeof idempotency !== 'object' || idempotency === null) {
    argument('idempotency must be { key, windowMs }', { path: 'idempotency' });
  }
  const { key, windowMs } = idempotency as { key?: unknown; windowMs?: unknown };
  const idempotencyKey = checkName(key, 'idempotency.key', 'queueKeyLengthMax');
  const idempotencyWindowMs = positiveInteger(windowMs, 'idempotency.windowMs');
  if (idempotencyWindowMs > Limits.queueThrottleWindowMsMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `idempotency.windowMs ${idempotencyWindowMs} is over queueThrottleWindowMsMax ` +
        `(${Limits.queueThrottleWindowMsMax})`,
      {
        limit: 'queueThrottleWindowMsMax',
        path: 'idempotency.windowMs',
        actual: idempotencyWindowMs,
      },
    );
  }
  return { idempotencyKey, idempotencyWindowMs };
}

/** Validates an item's per-key throttle: `{ key, count, windowMs }` or absent. */
function prepareThrottle(
  throttle: unknown,
): Pick<PreparedEnqueue, 'throttleKey' | 'throttleCount' | 'throttleWindowMs'> {
  if (throttle === undefined)
    return { throttleKey: null, throttleCount: null, throttleWindowMs: null };
  if (typeof throttle !== 'object' || throttle === null) {
    argument('throttle must be { key, count, windowMs }', { path: 'throttle' });
  }
  const { key, count, windowMs } = throttle as {
    key?: unknown;
    count?: unknown;
    windowMs?: unknown;
  };
  const throttleKey = checkName(key, 'throttle.key', 'queueKeyLengthMax');
  const throttleCount = positiveInteger(count, 'throttle.count');
  const throttleWindowMs = positiveInteger(windowMs, 'throttle.windowMs');
  if (throttleWindowMs > Limits.queueThrottleWindowMsMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `throttle.windowMs ${throttleWindowMs} is over queueThrottleWindowMsMax ` +
        `(${Limits.queueThrottleWindowMsMax})`,
      { limit: 'queueThrottleWindowMsMax', path: 'throttle.windowMs', actual: throttleWindowMs },
    );
  }
  return { throttleKey, throttleCount, throttleWindowMs };
}

/** Claim options, validated, with the times they imply at `nowMs`. */
export interface PreparedClaim {
  queue: string;
  owner: string;
  limit: number;
  concurrencyMax: number | null;
  partitionConcurrencyMax: number | null;
  rateCount: number | null;
  /** Claims started after this epoch ms count against the rate; null without a rate. */
  windowStartMs: number | null;
  nowMs: number;
  claimExpiresAtMs: number;
  /** Only items of these flows; undefined for every flow. */
  flows: readonly FlowKey[] | undefined;
}

/** Validates a claim. Throws `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`. */
export function prepareClaim(queue: unknown, options: ClaimOptions, nowMs: number): PreparedClaim {
  const name = checkQueueName(queue);
  if (typeof options !== 'object' || options === null) argument('claim needs options', {});
  const owner = checkLeaseOwner(options.owner);
  const limit = positiveInteger(options.limit, 'limit');
  if (limit > Limits.queueBatchMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `claim limit ${limit} is over queueBatchMax (${Limits.queueBatchMax})`,
      { limit: 'queueBatchMax', actual: limit },
    );
  }
  const optional = (value: unknown, path: string) =>
    value === undefined ? null : positiveInteger(value, path);
  const concurrencyMax = optional(options.concurrencyMax, 'concurrencyMax');
  const partitionConcurrencyMax = optional(
    options.partitionConcurrencyMax,
    'partitionConcurrencyMax',
  );
  let rateCount: number | null = null;
  let windowStartMs: number | null = null;
  if (options.rate !== undefined) {
    if (typeof options.rate !== 'object' || options.rate === null) {
      argument('rate must be { count, windowMs }', { path: 'rate' });
    }
    rateCount = positiveInteger(options.rate.count, 'rate.count');
    windowStartMs = nowMs - positiveInteger(options.rate.windowMs, 'rate.windowMs');
  }
  const claimExpiresAtMs = leaseExpiry(options.claimTtlMs, nowMs);
  return {
    queue: name,
    owner,
    limit,
    concurrencyMax,
    partitionConcurrencyMax,
    rateCount,
    windowStartMs,
    nowMs,
    claimExpiresAtMs,
    flows: claimFlows(options.flows, 'claim'),
  };
}

/** Validates a batch of item ids; returns them without duplicates, in first-seen order. */
export function checkQueueBatch(itemIds: unknown, operation: string): string[] {
  if (!Array.isArray(itemIds)) {
    argument(`${operation} needs an array of item ids, got ${typeof itemIds}`, { path: 'itemIds' });
  }
  if (itemIds.length > Limits.queueBatchMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `${operation} got ${itemIds.length} item ids, over queueBatchMax (${Limits.queueBatchMax}): split the batch`,
      { limit: 'queueBatchMax', actual: itemIds.length, operation },
    );
  }
  return [...new Set(itemIds.map(checkQueueItemId))];
}

/** A claimable item as the pick sees it: candidates arrive best first. */
export interface ClaimCandidate {
  itemId: string;
  partitionKey: string | null;
  /** The item's own partition limit, null for none. */
  partitionConcurrencyMax: number | null;
  /** The item's throttle key and count, null for none. */
  throttleKey: string | null;
  throttleCount: number | null;
  /** Claims of its throttle key within its window, before this claim (0 without a throttle). */
  throttleStarted: number;
}

/** The limit a candidate's partition is held to: the lower of the claim's and the item's. */
export function partitionLimitOf(
  candidate: Pick<ClaimCandidate, 'partitionConcurrencyMax'>,
  claimPartitionMax: number | null,
): number | null {
  const own = candidate.partitionConcurrencyMax;
  if (own === null) return claimPartitionMax;
  return claimPartitionMax === null ? own : Math.min(own, claimPartitionMax);
}

/**
 * The claim decision of the memory and SQLite stores (Postgres does the same in SQL): walk the
 * candidates best first and take each whose partition has room under its limit (the lower of the
 * claim's and the item's own) and whose throttle key was claimed fewer than its item's
 * `throttle.count` times within its window (counting this claim's picks), until the budget is
 * spent. `budget` is already min(limit,
 * concurrencyMax - running, rate.count - started in window).
 */
export function pickClaims(
  candidates: readonly ClaimCandidate[],
  budget: number,
  runningByPartition: Map<string, number>,
  partitionConcurrencyMax: number | null,
): string[] {
  const picked: string[] = [];
  const taken = new Map(runningByPartition);
  // Claims per throttle key: the window's count as the first candidate of the key saw it, plus
  // this claim's picks of the key.
  const throttled = new Map<string, number>();
  for (const candidate of candidates) {
    if (picked.length >= budget) break;
    const throttleKey = candidate.throttleKey;
    const started =
      throttleKey === null ? 0 : (throttled.get(throttleKey) ?? candidate.throttleStarted);
    if (throttleKey !== null && started >= (candidate.throttleCount ?? Infinity)) {
      throttled.set(throttleKey, started);
      continue;
    }
    const partition = candidate.partitionKey;
    const limit = partitionLimitOf(candidate, partitionConcurrencyMax);
    if (partition !== null && limit !== null) {
      const running = taken.get(partition) ?? 0;
      if (running >= limit) continue;
      taken.set(partition, running + 1);
    }
    if (throttleKey !== null) throttled.set(throttleKey, started + 1);
    picked.push(candidate.itemId);
  }
  return picked;
}

/** min(limit, concurrencyMax - running, rateCount - startedInWindow), never below 0. */
export function claimBudget(
  claim: PreparedClaim,
  running: number,
  startedInWindow: number,
): number {
  let budget = claim.limit;
  if (claim.concurrencyMax !== null) budget = Math.min(budget, claim.concurrencyMax - running);
  if (claim.rateCount !== null) budget = Math.min(budget, claim.rateCount - startedInWindow);
  return Math.max(0, budget);
}

const outcomes: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/** Validates `complete`'s outcome (default `completed`). Throws `INVALID_ARGUMENT`. */
export function checkQueueOutcome(outcome: unknown): QueueItemOutcome {
  if (outcome === undefined) return 'completed';
  if (typeof outcome !== 'string' || !outcomes.has(outcome)) {
    argument(`outcome must be completed, failed or cancelled, got ${String(outcome)}`, {
      path: 'outcome',
    });
  }
  return outcome as QueueItemOutcome;
}

/** Validated `listQueues` options: the cursor ('' for the start) and the page size. */
export function listQueuesOptions(options: ListQueuesOptions | undefined): {
  afterQueue: string;
  limit: number;
} {
  const after = options?.afterQueue;
  const limit =
    options?.limit === undefined ? Limits.queueListMax : positiveInteger(options.limit, 'limit');
  if (limit > Limits.queueListMax) {
    argument(`limit must be 1 to queueListMax (${Limits.queueListMax}), got ${limit}`, {
      path: 'limit',
      limit: 'queueListMax',
    });
  }
  return { afterQueue: after === undefined ? '' : checkQueueName(after), limit };
}
