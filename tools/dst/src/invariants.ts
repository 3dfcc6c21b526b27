import {
  type EventStore,
  type ExecutionSummary,
  loadState,
  type Snapshot,
  type SnapshotStore,
  type StoredEvent,
} from '@loom/event-runtime';
import { nextOccurrence, parseCron } from '@loom/workflow-runtime';
import { type Recorder, terminalTypes } from './internal/recorder.js';
import type { Violation } from './sim-world.js';

/** What the checks read: the shared stores (directly, no faults) and what the run recorded. */
export interface InvariantInput {
  events: EventStore;
  recorder: Recorder;
  /** Every event of the log, in commit order. */
  log: readonly StoredEvent[];
  index: readonly ExecutionSummary[];
  mustSettle: readonly string[];
  nowMs: number;
  /** A suspended execution due longer ago than this is stranded, not waiting. */
  wakeGraceMs: number;
}

const plainTypes: ReadonlySet<string> = new Set([
  'execution.started',
  'step.started',
  'step.completed',
  'execution.completed',
]);

/** Runs every invariant; returns what broke (empty when nothing did). */
export async function checkInvariants(input: InvariantInput): Promise<Violation[]> {
  const violations: Violation[] = [];
  const report = (invariant: string, detail: string, executionId?: string) =>
    violations.push({ invariant, detail, ...(executionId === undefined ? {} : { executionId }) });
  const byExecution = new Map<string, StoredEvent[]>();
  for (const event of input.log) {
    const events = byExecution.get(event.executionId) ?? [];
    events.push(event);
    byExecution.set(event.executionId, events);
  }
  ackedNotLost(input, byExecution, report);
  oneOwnerPerEpoch(input.recorder, report);
  queueLimits(input.recorder, report);
  const indexById = new Map(input.index.map((row) => [row.executionId, row]));
  for (const id of input.mustSettle) {
    if (
      !input.recorder.settled.has(id) &&
      !byExecution.get(id)?.some((e) => terminalTypes.has(e.type))
    ) {
      report(
        'execution-ended',
        `must have ended but is ${indexById.get(id)?.status ?? 'missing'}`,
        id,
      );
    }
  }
  for (const [executionId, events] of byExecution) {
    endsOnce(events, indexById.get(executionId), input, (d) =>
      report('execution-ended', d, executionId),
    );
    notFailedByTransientStore(events, (d) =>
      report('no-fail-on-transient-store-error', d, executionId),
    );
    plainIsTwoNPlusTwo(events, (d) => report('plain-2n+2', d, executionId));
    timersNotEarly(events, (d) => report('timer-not-early', d, executionId));
    await signalsOnce(input.events, events, input.recorder, (d) =>
      report('signal-once', d, executionId),
    );
    await replayAgrees(input.events, events, (d) => report('replay-same-state', d, executionId));
  }
  cronOnce(byExecution, report);
  return violations;
}

type Report = (invariant: string, detail: string, executionId?: string) => void;

function ackedNotLost(
  input: InvariantInput,
  byExecution: Map<string, StoredEvent[]>,
  report: Report,
) {
  for (const [key, hashes] of input.recorder.acked) {
    const slash = key.lastIndexOf('/');
    const executionId = key.slice(0, slash);
    const sequence = Number(key.slice(slash + 1));
    const stored = byExecution.get(executionId)?.[sequence];
    if (stored?.sequence !== sequence || hashes.some((hash) => hash !== stored.hash)) {
      report(
        'acked-not-lost',
        `sequence ${sequence} was acknowledged but is not in the log as acknowledged`,
        executionId,
      );
    }
  }
}

/**
 * Per execution, in commit order: no append carries an epoch older than one already advanced
 * to or appended with (a takeover shuts the old owner out), and one epoch has one writer.
 */
function oneOwnerPerEpoch(recorder: Recorder, report: Report) {
  const seen = new Map<string, { epoch: number; node: string }>();
  const fenced = new Map<string, number>();
  const timeline = [
    ...recorder.committed.map((append) => ({
      kind: 'append' as const,
      append,
      order: append.order,
    })),
    ...recorder.advances.map((advance) => ({
      kind: 'advance' as const,
      advance,
      order: advance.order,
    })),
  ].sort((a, b) => a.order - b.order);
  for (const entry of timeline) {
    if (entry.kind === 'advance') {
      const { executionId, epoch } = entry.advance;
      fenced.set(executionId, Math.max(epoch, fenced.get(executionId) ?? 0));
      continue;
    }
    const { append } = entry;
    if (append.fenceEpoch === undefined) continue;
    const fence = fenced.get(append.executionId) ?? 0;
    if (append.fenceEpoch < fence) {
      report(
        'one-owner-per-epoch',
        `${append.node} appended at epoch ${append.fenceEpoch} after the fence moved to ${fence} (sequence ${append.firstSequence})`,
        append.executionId,
      );
      continue;
    }
    const last = seen.get(append.executionId);
    if (last !== undefined) {
      if (append.fenceEpoch < last.epoch) {
        report(
          'one-owner-per-epoch',
          `${append.node} appended at epoch ${append.fenceEpoch} after epoch ${last.epoch} (sequence ${append.firstSequence})`,
          append.executionId,
        );
      } else if (append.fenceEpoch === last.epoch && append.node !== last.node) {
        report(
          'one-owner-per-epoch',
          `${last.node} and ${append.node} both appended at epoch ${append.fenceEpoch}`,
          append.executionId,
        );
      }
    }
    if (last === undefined || append.fenceEpoch >= last.epoch) {
      seen.set(append.executionId, { epoch: append.fenceEpoch, node: append.node });
    }
  }
}

function queueLimits(recorder: Recorder, report: Report) {
  for (const [itemId, item] of recorder.debounced) {
    if (item.appliedAfterClaim > 0) {
      report(
        'debounce-last-input',
        `${item.appliedAfterClaim} debounced enqueues were applied to item ${itemId} after a claim took it`,
      );
    }
  }
  for (const claim of recorder.claims) {
    if (claim.concurrencyMax !== undefined && claim.claimedNow > claim.concurrencyMax) {
      report(
        'queue-limit',
        `${claim.claimedNow} items of ${claim.queue} under claim, limit ${claim.concurrencyMax}, at ${claim.atMs}`,
      );
    }
    for (const key of claim.keys) {
      if (key.claimed > key.limit) {
        report(
          'key-limit',
          `${key.claimed} items of key ${key.key} in ${claim.queue} under claim, its limit ${key.limit}, at ${claim.atMs}`,
        );
      }
    }
    for (const item of claim.debounced ?? []) {
      if (!item.lastInput || !item.due) {
        report(
          'debounce-last-input',
          `debounced item ${item.itemId} of ${claim.queue} was claimed at ${claim.atMs} ` +
            (item.lastInput ? 'before it was due' : 'with an input other than its last'),
        );
      }
    }
    for (const throttle of claim.throttles ?? []) {
      if (throttle.started > throttle.limit) {
        report(
          'throttle-limit',
          `${throttle.started} items of throttle key ${throttle.key} in ${claim.queue} claimed within its window, its limit ${throttle.limit}, at ${claim.atMs}`,
        );
      }
    }
  }
}

function endsOnce(
  events: StoredEvent[],
  row: ExecutionSummary | undefined,
  input: InvariantInput,
  report: (detail: string) => void,
) {
  const terminals = events.filter((event) => terminalTypes.has(event.type));
  if (terminals.length > 1) report(`${terminals.length} terminal events`);
  if (terminals.length === 1 && events.at(-1) !== terminals[0])
    report('events after its terminal event');
  if (terminals.length > 0) return;
  if (row?.status === 'suspended') {
    if (row.wakeAtMs !== null && row.wakeAtMs < input.nowMs - input.wakeGraceMs) {
      report(`suspended until ${row.wakeAtMs} but nobody woke it by ${input.nowMs}`);
    }
    return;
  }
  report(`neither ended nor waiting: status ${row?.status ?? 'not indexed'}`);
}

/** Store errors that heal by themselves: the runtime retries them, a flow never fails of one. */
const transientCodes: ReadonlySet<string> = new Set([
  'STORE_UNAVAILABLE',
  'STORE_BUSY',
  'STORE_FULL',
]);

/** An execution never ends `execution.failed` with a transient store error (it is resumed instead). */
function notFailedByTransientStore(events: StoredEvent[], report: (detail: string) => void) {
  for (const event of events) {
    if (event.type !== 'execution.failed') continue;
    const code = (event.payload as { error?: { code?: unknown } }).error?.code;
    if (typeof code === 'string' && transientCodes.has(code)) {
      report(`failed with ${code}, a transient store error the runtime should have retried`);
    }
  }
}

/**
 * A completed execution of plain steps wrote each step's start and outcome once: 2n + 2 events
 * for n steps, plus one for each record (`ctx.record`: its outcome alone, marked `record`).
 */
function plainIsTwoNPlusTwo(events: StoredEvent[], report: (detail: string) => void) {
  if (events.at(-1)?.type !== 'execution.completed') return;
  if (!events.every((event) => plainTypes.has(event.type))) return;
  const started = events.filter((event) => event.type === 'step.started').length;
  // Counted by operation index: a record written twice is one record and one event too many. A
  // record whose index has a step.started (an older writer's start, run again as a record) is
  // counted as that step.
  const startedIndexes = new Set(
    events
      .filter((event) => event.type === 'step.started')
      .map((event) => (event.payload as { index?: unknown }).index),
  );
  const records = new Set(
    events
      .filter(
        (event) =>
          event.type === 'step.completed' &&
          (event.payload as { record?: unknown }).record === true,
      )
      .map((event) => (event.payload as { index?: unknown }).index)
      .filter((index) => !startedIndexes.has(index)),
  ).size;
  const want = 2 * started + records + 2;
  if (events.length !== want) {
    report(
      `${events.length} events for ${started} step.started and ${records} records (want ${want})`,
    );
  }
}

function timersNotEarly(events: StoredEvent[], report: (detail: string) => void) {
  const wakeAt = new Map<number, number>();
  for (const event of events) {
    const payload = event.payload as { index?: number; wakeAtMs?: number };
    if (
      event.type === 'timer.scheduled' &&
      payload.index !== undefined &&
      payload.wakeAtMs !== undefined
    ) {
      wakeAt.set(payload.index, payload.wakeAtMs);
    }
    if (event.type === 'timer.fired' && payload.index !== undefined) {
      const due = wakeAt.get(payload.index);
      if (due === undefined) report(`timer ${payload.index} fired but was never scheduled`);
      else if (event.at < due)
        report(`timer ${payload.index} fired at ${event.at}, ${due - event.at} ms early`);
    }
  }
}

async function signalsOnce(
  store: EventStore,
  events: StoredEvent[],
  recorder: Recorder,
  report: (detail: string) => void,
) {
  const executionId = events[0]?.executionId;
  if (executionId === undefined) return;
  const inbox = await store.readSignals(executionId);
  const keys = new Set<string>();
  for (const signal of inbox) {
    if (signal.idempotencyKey === null) continue;
    if (keys.has(signal.idempotencyKey))
      report(`signal key ${signal.idempotencyKey} is in the inbox twice`);
    keys.add(signal.idempotencyKey);
  }
  for (const sent of recorder.signals) {
    if (
      sent.executionId === executionId &&
      sent.idempotencyKey !== undefined &&
      !keys.has(sent.idempotencyKey)
    ) {
      report(`signal key ${sent.idempotencyKey} was acknowledged but is not in the inbox`);
    }
  }
  const received = new Set<number>();
  for (const event of events) {
    if (event.type !== 'signal.received') continue;
    const { signalId } = event.payload as { signalId: number };
    if (received.has(signalId)) report(`signal ${signalId} was received twice`);
    received.add(signalId);
  }
}

/**
 * The state folded from the whole log equals the state folded from a snapshot taken halfway
 * (round-tripped through JSON, as a snapshot store keeps it) plus the tail.
 */
async function replayAgrees(
  store: EventStore,
  events: StoredEvent[],
  report: (detail: string) => void,
) {
  const executionId = events[0]?.executionId;
  if (executionId === undefined || events.length < 2) return;
  const full = await loadState(store, undefined, executionId);
  const middle = Math.floor(events.length / 2);
  const head = await loadState(truncated(store, middle), undefined, executionId);
  const snapshot: Snapshot = {
    executionId,
    sequence: middle - 1,
    state: JSON.parse(JSON.stringify(head.state)),
    at: events[middle - 1]?.at ?? 0,
  };
  const fromSnapshot = await loadState(store, fixedSnapshot(snapshot), executionId);
  const a = JSON.stringify(full.state);
  const b = JSON.stringify(fromSnapshot.state);
  if (a !== b)
    report(`replay from a snapshot at ${middle - 1} gives another state than the full fold`);
}

function truncated(store: EventStore, length: number): EventStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property !== 'read') return Reflect.get(target, property, receiver);
      return async (executionId: string, options?: { fromSequence?: number; limit?: number }) =>
        (await target.read(executionId, options)).filter((event) => event.sequence < length);
    },
  });
}

function fixedSnapshot(snapshot: Snapshot): SnapshotStore {
  return {
    save: async () => undefined,
    load: async (executionId) => (executionId === snapshot.executionId ? snapshot : undefined),
    close: async () => undefined,
  };
}

/** Every occurrence of a schedule fired once: one fire step per due time, one run per fire. */
function cronOnce(byExecution: Map<string, StoredEvent[]>, report: Report) {
  const fired = new Map<string, number[]>();
  let expression: string | undefined;
  for (const [executionId, events] of byExecution) {
    const started = events[0]?.payload as
      | { flow?: string; input?: { name?: string; expression?: string } }
      | undefined;
    if (started?.flow !== 'loom.cron.schedule' || started.input?.name === undefined) continue;
    expression = started.input.expression;
    const dues = fired.get(started.input.name) ?? [];
    for (const event of events) {
      const payload = event.payload as { name?: string; result?: unknown };
      if (
        event.type === 'step.completed' &&
        payload.name?.startsWith('fire-') &&
        payload.result === true
      ) {
        dues.push(Number(payload.name.slice('fire-'.length)));
      }
    }
    fired.set(started.input.name, dues);
    void executionId;
  }
  for (const [name, dues] of fired) {
    const sorted = [...dues].sort((a, b) => a - b);
    for (let index = 1; index < sorted.length; index++) {
      const previous = sorted[index - 1] as number;
      const due = sorted[index] as number;
      if (due === previous) report('cron-once', `occurrence ${due} of ${name} fired twice`);
      else if (
        expression !== undefined &&
        nextOccurrence(parseCron(expression), previous, 'UTC') !== due
      ) {
        report('cron-once', `occurrences of ${name} between ${previous} and ${due} never fired`);
      }
    }
    const runs = [...byExecution.keys()].filter((id) => id.startsWith(`cron:${name}:`));
    const expected = new Set(sorted.map((due) => `cron:${name}:${due}`));
    for (const run of runs)
      if (!expected.has(run)) report('cron-once', `run ${run} has no fire step`, run);
    for (const run of expected)
      if (!byExecution.has(run))
        report('cron-once', `occurrence ${run} fired but never started`, run);
  }
}
