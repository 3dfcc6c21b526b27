import { type Agent, createAgentRuntime } from '@loom/agent-loop';
import {
  ErrorCode,
  type EventEnvelope,
  type EventStore,
  type Flow,
  type JsonValue,
  LoomError as KernelLoomError,
  openMemory,
  type StoredEvent,
} from '@loom/event-runtime';
import { createRuntime } from '@loom/workflow-runtime';
import { LoomError, ViewErrorCode } from './errors.js';

/** An event as a replay compares it: its type and payload (times and hashes aside). */
export interface ReplayedEvent {
  type: string;
  payload: JsonValue;
}

/** What `replayLog` found. */
export interface ReplayReport {
  executionId: string;
  /** The flow the log's `execution.started` names. */
  flow: string;
  /** Events in the recorded log. */
  recordedEvents: number;
  /** True when today's code reproduced the log (and, for an ended run, its ending). */
  ok: boolean;
  /**
   * Where today's code parts from the log: the first sequence that differs, what the log has
   * there (null: nothing, the log ended) and what the code wrote instead (null: it wrote nothing
   * more), and why, in words.
   */
  divergence?: {
    sequence: number;
    recorded: ReplayedEvent | null;
    replayed: ReplayedEvent | null;
    message: string;
  };
  /**
   * For a run that had not ended: what today's code would write next (a new step, a
   * suspension); undefined when it would write nothing.
   */
  next?: ReplayedEvent[];
}

/** What else a replay runs besides flows. */
export interface ReplayOptions {
  /**
   * Agents (`defineAgent`) as deployed today: an agent run's log (flow `agent:<name>`) is
   * re-folded by its agent's loop, with the model's recorded decisions, policy verdicts and tool
   * results read back from the log (no model or tool is called).
   */
  agents?: readonly Agent[];
}

/** How long a replay may take before it is given up (real time). */
export const replayDeadlineMs = 30_000;

const terminalTypes: ReadonlySet<string> = new Set([
  'execution.completed',
  'execution.failed',
  'execution.cancelled',
  'execution.continued_as_new',
]);

/** A failed ending is compared on its error's name, code and message (stacks name paths). */
function comparable(event: ReplayedEvent): unknown {
  if (event.type !== 'execution.failed') return event;
  const error = (event.payload as { error?: { name?: unknown; code?: unknown; message?: unknown } })
    .error;
  return { type: event.type, name: error?.name, code: error?.code, message: error?.message };
}

function same(a: ReplayedEvent, b: ReplayedEvent): boolean {
  return JSON.stringify(comparable(a)) === JSON.stringify(comparable(b));
}

function checkLog(events: readonly StoredEvent[]): { executionId: string; flow: string } {
  const first = events[0];
  const flow = (first?.payload as { flow?: unknown } | undefined)?.flow;
  if (first === undefined || first.type !== 'execution.started' || typeof flow !== 'string') {
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      'a log to replay starts with its execution.started event (as `loom export` writes it)',
      { path: 'log' },
    );
  }
  events.forEach((event, index) => {
    if (event.executionId !== first.executionId || event.sequence !== index) {
      throw new LoomError(
        ViewErrorCode.INVALID_ARGUMENT,
        `a log to replay is one execution's events in sequence order from 0; event ${index} is ` +
          `${event.executionId} #${event.sequence}`,
        { path: 'log', actual: index },
      );
    }
  });
  return { executionId: first.executionId, flow };
}

/**
 * Re-folds a recorded log with today's code and reports whether it still fits: run it before a
 * deploy, against logs of runs in flight (`loom export`, or read from the database), to see a
 * change that would make them fail with `NON_DETERMINISM` (or end differently) after the deploy.
 *
 * The log is copied into an in-memory store and resumed there with `flows`; every write the code
 * attempts is caught and refused, so no step's effect runs: a new step's `step.started` must be
 * durable before its effect, and it never is. A log that ended is replayed without its ending,
 * and the ending the code reaches is compared with the recorded one (a failure by its error's
 * name, code and message).
 *
 * An agent run is replayed the same way with `options.agents`: its loop is a flow, and a change
 * that no longer fits the log (a tool renamed or removed, steps in another order) makes it end
 * differently or fail with `NON_DETERMINISM`.
 *
 * Error codes: `INVALID_ARGUMENT` (not one execution's log from sequence 0), `FLOW_NOT_REGISTERED`
 * (no flow or agent of that name and version in `flows` / `options.agents`), `LIMIT_EXCEEDED` (the
 * replay ran past {@link replayDeadlineMs}).
 *
 * @example
 * const report = await replayLog(events, [order]);
 * if (!report.ok) console.error(report.divergence?.message);
 * const agentReport = await replayLog(agentEvents, [], { agents: [support] });
 */
export async function replayLog(
  events: readonly StoredEvent[],
  flows: ReadonlyArray<Flow<never, unknown>>,
  options: ReplayOptions = {},
): Promise<ReplayReport> {
  const { executionId, flow } = checkLog(events);
  const last = events[events.length - 1] as StoredEvent;
  const ended = terminalTypes.has(last.type);
  const loaded = ended ? events.slice(0, -1) : events;
  const backend = openMemory();
  const attempted: EventEnvelope[][] = [];
  try {
    await backend.events.append(
      loaded.map((event) => ({
        executionId,
        sequence: event.sequence,
        type: event.type,
        payload: event.payload,
        at: event.at,
      })),
    );
    const refusing = refuseWrites(backend.events, attempted);
    const runtime = createRuntime({
      store: refusing,
      leases: backend.leases,
      flows: flows as never,
      timerPollMs: 0,
      recoverEveryMs: 0,
      inlineWaitMs: 0,
      onError: () => undefined,
    });
    // The agents' loops register themselves as flows of this runtime (`agent:<name>`).
    const agents =
      options.agents === undefined || options.agents.length === 0
        ? undefined
        : createAgentRuntime({ flows: runtime, agents: options.agents });
    try {
      await runtime.resume(executionId);
      const deadline = Date.now() + replayDeadlineMs;
      while (runtime.activeExecutions.includes(executionId)) {
        if (Date.now() > deadline) {
          throw new KernelLoomError(
            ErrorCode.LIMIT_EXCEEDED,
            `the replay of ${executionId} did not end within ${replayDeadlineMs} ms: does today's code wait for something outside the log?`,
            { executionId, limit: 'replayDeadlineMs' },
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    } finally {
      await runtime.shutdown();
      await agents?.close();
    }
  } finally {
    await backend.close();
  }
  const written: ReplayedEvent[] = (attempted[0] ?? []).map((e) => ({
    type: e.type,
    payload: e.payload,
  }));
  const report: ReplayReport = { executionId, flow, recordedEvents: events.length, ok: true };
  const replayed = written[0] ?? null;
  const at = operationSequence(loaded, replayed);
  if (!ended) {
    if (written.length > 0) report.next = written;
    if (replayed?.type === 'execution.failed') {
      diverge(report, at?.sequence ?? loaded.length, at ?? null, replayed);
    }
    return report;
  }
  const recorded: ReplayedEvent = { type: last.type, payload: last.payload };
  if (replayed === null || !same(recorded, replayed)) {
    diverge(report, at?.sequence ?? last.sequence, at ?? recorded, replayed);
  }
  return report;
}

/**
 * For a `NON_DETERMINISM` failure ("operation N was …"), the recorded event that started
 * operation N: where the log and today's code part.
 */
function operationSequence(
  loaded: readonly StoredEvent[],
  replayed: ReplayedEvent | null,
): (ReplayedEvent & { sequence: number }) | undefined {
  const error = (replayed?.payload as { error?: { code?: string; message?: string } } | undefined)
    ?.error;
  if (error?.code !== ErrorCode.NON_DETERMINISM) return undefined;
  const operation = /operation (\d+)/.exec(error.message ?? '');
  if (operation === null) return undefined;
  const index = Number(operation[1]);
  const event = loaded.find(
    (e) => e.sequence > 0 && (e.payload as { index?: unknown } | null)?.index === index,
  );
  return event === undefined
    ? undefined
    : { sequence: event.sequence, type: event.type, payload: event.payload };
}

function diverge(
  report: ReplayReport,
  sequence: number,
  at: ReplayedEvent | null,
  replayed: ReplayedEvent | null,
): void {
  const recorded = at === null ? null : { type: at.type, payload: at.payload };
  const error = (replayed?.payload as { error?: { code?: string; message?: string } } | undefined)
    ?.error;
  const message =
    error?.code === ErrorCode.NON_DETERMINISM
      ? (error.message ?? 'non-determinism')
      : replayed === null
        ? `today's code wrote nothing at sequence ${sequence} where the log has ${recorded?.type}`
        : recorded === null
          ? `today's code ends the run with ${replayed.type} where the log goes on`
          : `at sequence ${sequence} the log has ${recorded.type} ${JSON.stringify(recorded.payload)}, today's code wrote ${replayed.type} ${JSON.stringify(replayed.payload)}`;
  report.ok = false;
  report.divergence = { sequence, recorded, replayed, message };
}

/** `store`, with every append (and transaction) recorded in `attempted` and refused. */
function refuseWrites(store: EventStore, attempted: EventEnvelope[][]): EventStore {
  const refuse = (envelopes: readonly EventEnvelope[]) => {
    attempted.push([...envelopes]);
    return Promise.reject(
      new KernelLoomError(ErrorCode.STORE_READ_ONLY, 'a replay writes nothing', {
        operation: 'append',
      }),
    );
  };
  return new Proxy(store, {
    get(target, property) {
      if (property === 'append') return refuse;
      if (property === 'transact') return undefined;
      if (property === 'appendBatch') return undefined;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
