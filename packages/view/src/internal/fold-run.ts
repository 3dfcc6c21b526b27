import {
  EventType,
  type JsonValue,
  type StoredEvent,
  type StoredSignal,
} from '@loom/event-runtime';
import type { AgentStepRole, RunRetry, TimelineEntry } from '../run-detail.js';

/** The prefix of an agent run's flow name (`agentFlowName` in `@loom/agent-loop`). */
export const agentFlowPrefix = 'agent:';

/** What one read of a run's log tells: everything but the index's columns and the approvals. */
export interface FoldedRun {
  flow: string | null;
  version: string | null;
  input: JsonValue | null;
  parentId: string | null;
  steps: number;
  terminalReason: string | null;
  output?: JsonValue;
  error?: { message: string; code?: string };
  timeline: TimelineEntry[];
  consumedSignalIds: Set<number>;
  retries: RunRetry[];
}

/** An event's payload as an object of JSON fields. */
export type Payload = { [key: string]: JsonValue | undefined };

// Agent step names as agent-loop records them (`decide:<turn>`, `tool:<key>`, …).
const agentRoles: ReadonlyArray<readonly [string, AgentStepRole]> = [
  ['decide:', 'decision'],
  ['policy:', 'policy'],
  ['start:', 'tool_started'],
  ['tool:', 'tool_call'],
  ['approval:', 'approval'],
  ['question:', 'question'],
];

/** `value` when it is a JSON object, else an empty one. */
export function record(value: JsonValue | undefined): Payload {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Payload)
    : {};
}

/** `value` when it is a string. */
export function text(value: JsonValue | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** `value` when it is a number. */
export function num(value: JsonValue | undefined): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

function errorOf(value: JsonValue | undefined): { message: string; code?: string } {
  const error = record(value);
  const code = text(error.code);
  return {
    message: text(error.message) ?? JSON.stringify(value ?? null),
    ...(code === undefined ? {} : { code }),
  };
}

/**
 * Folds a run's log (in sequence order) into its timeline and outcome. Unknown event types are
 * skipped: the view reads logs written by newer code without failing.
 */
export function foldRun(
  events: readonly StoredEvent[],
  isAgent: (flow: string | null) => boolean,
): FoldedRun {
  const folded: FoldedRun = {
    flow: null,
    version: null,
    input: null,
    parentId: null,
    steps: 0,
    terminalReason: null,
    timeline: [],
    consumedSignalIds: new Set(),
    retries: [],
  };
  // Open entries by kind and index: a later event of the same index closes them.
  const open = new Map<string, { entry: TimelineEntry; at: number }>();
  let agent = false;
  // A new timeline entry, open from `event` on: the fields every kind shares, then its own.
  const openEntry = (
    key: string,
    event: { at: number; sequence: number },
    fields: Pick<TimelineEntry, 'kind' | 'name' | 'index'> & Partial<TimelineEntry>,
  ) => {
    const entry: TimelineEntry = {
      status: 'open',
      startedAtMs: event.at,
      endedAtMs: null,
      durationMs: null,
      sequence: event.sequence,
      failedAttempts: 0,
      interruptions: 0,
      ...fields,
    };
    folded.timeline.push(entry);
    open.set(key, { entry, at: folded.timeline.length - 1 });
  };
  // A step's entry, opened by its first start (a retry's next attempt keeps it), or by its
  // outcome when it has none (a record).
  const openStep = (event: StoredEvent, p: Payload, index: number) => {
    const stepKey = `step:${index}`;
    if (open.has(stepKey)) return;
    folded.steps += 1;
    const name = text(p.name) ?? '';
    const role = agent ? agentRoles.find(([prefix]) => name.startsWith(prefix)) : undefined;
    openEntry(stepKey, event, {
      kind: 'step',
      name,
      index,
      ...(role === undefined ? {} : { agentRole: role[1], agentKey: name.slice(role[0].length) }),
    });
  };
  const close = (key: string, at: number, patch: Partial<TimelineEntry>) => {
    const found = open.get(key);
    if (found === undefined) return;
    open.delete(key);
    const entry = {
      ...found.entry,
      ...patch,
      endedAtMs: at,
      durationMs: at - found.entry.startedAtMs,
    };
    folded.timeline[found.at] = entry;
  };
  for (const event of events) {
    const p = record(event.payload);
    const index = num(p.index) ?? -1;
    switch (event.type) {
      case EventType.executionStarted: {
        folded.flow = text(p.flow) ?? null;
        folded.version = text(p.version) ?? null;
        folded.input = p.input ?? null;
        folded.parentId = text(record(p.parent).executionId) ?? null;
        agent = isAgent(folded.flow);
        break;
      }
      case EventType.stepStarted:
        openStep(event, p, index);
        break;
      case EventType.stepAttemptFailed:
      case EventType.stepInterrupted: {
        const found = open.get(`step:${index}`);
        if (found !== undefined) {
          const entry =
            event.type === EventType.stepInterrupted
              ? { ...found.entry, interruptions: found.entry.interruptions + 1 }
              : { ...found.entry, failedAttempts: found.entry.failedAttempts + 1 };
          found.entry = entry;
          folded.timeline[found.at] = entry;
        }
        break;
      }
      case EventType.stepCompleted:
        // A record (`ctx.record`) has no start: its entry opens and closes with its outcome.
        openStep(event, p, index);
        close(`step:${index}`, event.at, {
          status: 'completed',
          ...(p.result === undefined ? {} : { result: p.result }),
        });
        break;
      case EventType.stepFailed:
        openStep(event, p, index);
        close(`step:${index}`, event.at, { status: 'failed', error: errorOf(p.error).message });
        break;
      case EventType.timerScheduled:
        openEntry(`timer:${index}`, event, {
          kind: 'sleep',
          name: text(p.name) ?? '',
          index,
          dueAtMs: num(p.wakeAtMs) ?? null,
        });
        break;
      case EventType.timerFired:
        close(`timer:${index}`, event.at, { status: 'completed' });
        break;
      case EventType.signalWaiting:
        openEntry(`wait:${index}`, event, {
          kind: 'wait',
          name: text(p.name) ?? '',
          index,
          dueAtMs: num(p.timeoutAtMs) ?? null,
        });
        break;
      case EventType.signalReceived: {
        const signalId = num(p.signalId);
        if (signalId !== undefined) folded.consumedSignalIds.add(signalId);
        close(`wait:${index}`, event.at, {
          status: 'completed',
          ...(p.payload === undefined ? {} : { result: p.payload }),
        });
        break;
      }
      case EventType.signalTimedOut:
        close(`wait:${index}`, event.at, { status: 'timed_out' });
        break;
      case EventType.childStarted:
        openEntry(`child:${index}`, event, {
          kind: 'child',
          name: text(p.name) ?? '',
          index,
          childId: text(p.childId) ?? '',
        });
        break;
      case EventType.childCompleted: {
        const status = text(p.status);
        close(`child:${index}`, event.at, {
          status:
            status === 'failed' ? 'failed' : status === 'cancelled' ? 'cancelled' : 'completed',
          ...(p.output === undefined ? {} : { result: p.output }),
          ...(p.error === undefined ? {} : { error: errorOf(p.error).message }),
        });
        break;
      }
      case EventType.executionCompleted: {
        const output = p.output ?? null;
        folded.output = output;
        // An agent run completes with its RunResult: its reason is the terminal reason.
        folded.terminalReason = agent ? (text(record(output).reason) ?? 'completed') : 'completed';
        delete folded.error;
        break;
      }
      case EventType.executionFailed: {
        folded.error = errorOf(p.error);
        folded.terminalReason = folded.error.message;
        break;
      }
      case EventType.executionCancelled:
        folded.terminalReason = text(p.reason) ?? 'cancelled';
        break;
      case EventType.executionContinuedAsNew:
        folded.terminalReason = `continued as ${text(p.successorId) ?? '?'}`;
        break;
      case EventType.executionRetried: {
        folded.terminalReason = null;
        delete folded.error;
        // The failed step runs again: its entry is open again, closed by the next attempt's end.
        const stepIndex = num(p.stepIndex);
        const at = folded.timeline.findLastIndex(
          (e) => e.kind === 'step' && e.index === stepIndex && e.status === 'failed',
        );
        const failed = folded.timeline[at];
        if (failed !== undefined) {
          const { error: _error, ...rest } = failed;
          const entry: TimelineEntry = {
            ...rest,
            status: 'open',
            endedAtMs: null,
            durationMs: null,
          };
          folded.timeline[at] = entry;
          open.set(`step:${failed.index}`, { entry, at });
        }
        const by = text(p.by);
        const reason = text(p.reason);
        folded.retries.push({
          sequence: event.sequence,
          atMs: event.at,
          failedSequence: num(p.failedSequence) ?? -1,
          ...(by === undefined ? {} : { by }),
          ...(reason === undefined ? {} : { reason }),
        });
        break;
      }
      default:
        break;
    }
  }
  return folded;
}

/** Inbox signals with whether the run consumed them (approval decisions included). */
export function signalsOf(
  signals: readonly StoredSignal[],
  consumed: ReadonlySet<number>,
): { name: string; payload: JsonValue; consumed: boolean }[] {
  return signals.map((s) => ({
    name: s.name,
    payload: s.payload,
    consumed: consumed.has(s.signalId),
  }));
}
