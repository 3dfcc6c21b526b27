// A read-only replay of an execution's log, for queries (ADR 0061): the flow function runs
// against a context that answers every operation the log completed with what the log recorded,
// and parks forever at every operation it did not (an effect never runs, a timer is never armed,
// nothing is written). Once no operation moves any more, the flow stands where the log's last
// durable point left it, and the handlers it registered answer over that state.
import { randomUUID } from 'node:crypto';
import {
  type Clock,
  type ExecutionState,
  type Flow,
  type FlowContext,
  type JsonValue,
  ErrorCode as KernelErrorCode,
  LoomError,
  type StepRecord,
} from '@loom/event-runtime';
import { type QueryHandler, queryHandlersOf } from './query-handlers.js';

/** The flow after a read-only replay: its query handlers, and how far it got. */
export interface ReplayedFlow {
  readonly handlers: ReadonlyMap<string, QueryHandler>;
  /** The flow function returned or threw (the log is a settled execution's, or it ends there). */
  readonly ended: boolean;
  /** Operations the flow asked for during the replay. */
  readonly operations: number;
}

/**
 * Turns of the event loop a replay may take to come to rest. Replayed answers settle in
 * microtasks, so one turn suffices for a deterministic flow; more turns only serve a flow that
 * awaits something outside Loom between operations, and the bound keeps such a flow from
 * holding a query forever.
 */
export const replayTurnsMax = 100;

type OperationKind = NonNullable<StepRecord['kind']>;

/**
 * Replays `flow` over `state` (a fold of the whole log, results included) without writing or
 * running anything, and returns once it comes to rest. Throws `NON_DETERMINISM` when the flow
 * asks for an operation other than the one the log has at that place (the flow's code changed).
 */
export async function replayReadOnly(
  flow: Flow<unknown, unknown>,
  state: ExecutionState,
  clock: Clock,
): Promise<ReplayedFlow> {
  const replay = new ReadOnlyReplay(state, clock);
  const ctx = replay.context();
  let ended = false;
  flow.run(ctx, state.input).then(
    () => {
      ended = true;
    },
    () => {
      // What the flow threw is in the log already (or is the replay's own fatal, checked below).
      ended = true;
    },
  );
  for (let turn = 0; turn < replayTurnsMax && !ended; turn++) {
    const before = replay.operations;
    await new Promise<void>((resolve) => clock.defer(resolve));
    if (replay.operations === before) break;
  }
  if (replay.fatal !== undefined) throw replay.fatal;
  return { handlers: queryHandlersOf(ctx), ended, operations: replay.operations };
}

/** Never settles: the flow waits here for an operation the log has no outcome of. */
function parked<T>(): Promise<T> {
  return new Promise<T>(() => undefined);
}

class ReadOnlyReplay {
  private cursor = 0;
  operations = 0;
  fatal: LoomError | undefined;
  private readonly abort = new AbortController();

  constructor(
    private readonly state: ExecutionState,
    private readonly clock: Clock,
  ) {}

  /** The next operation's record when it is of `kind` and `name`; else NON_DETERMINISM. */
  private claim(kind: OperationKind, name: string): StepRecord | undefined {
    if (this.fatal !== undefined) throw this.fatal;
    this.operations++;
    const index = this.cursor++;
    const recorded = this.state.steps[index];
    if (recorded !== undefined && ((recorded.kind ?? 'step') !== kind || recorded.name !== name)) {
      this.fatal = new LoomError(
        KernelErrorCode.NON_DETERMINISM,
        `execution ${this.state.executionId}: operation ${index} was ${recorded.kind ?? 'step'} ` +
          `'${recorded.name}' in the log but the replay for a query asked for ${kind} '${name}'. ` +
          "The flow's code changed under a running execution; pin a version or keep the old path " +
          'with ctx.patched()',
        { executionId: this.state.executionId, expected: recorded.name, actual: name },
      );
      throw this.fatal;
    }
    return recorded;
  }

  private step(name: string): Promise<never> | Promise<JsonValue> {
    const index = this.cursor;
    const recorded = this.claim('step', name);
    if (recorded?.status === 'completed') return Promise.resolve(recorded.result ?? null);
    if (recorded?.status === 'failed') {
      // As the kernel's replay throws it (step-records.ts), so a flow that catches it branches alike.
      const attempts = recorded.attempts ?? 1;
      return Promise.reject(
        new LoomError(
          KernelErrorCode.STEP_FAILED,
          `step ${index} ('${name}') of execution ${this.state.executionId} failed` +
            `${attempts > 1 ? ` after ${attempts} attempts` : ''}: ` +
            `${recorded.error?.message ?? 'unknown error'}`,
          {
            executionId: this.state.executionId,
            step: name,
            stepIndex: index,
            attempts,
            error: (recorded.error ?? null) as never,
          },
        ),
      );
    }
    return parked();
  }

  private value(name: string, make: () => JsonValue): JsonValue {
    const recorded = this.claim('value', name);
    return recorded === undefined ? make() : (recorded.result ?? null);
  }

  context(): FlowContext {
    const { state } = this;
    return {
      executionId: state.executionId,
      signal: this.abort.signal,
      step: (name) => this.step(name) as Promise<never>,
      record: (name) => this.step(name) as Promise<never>,
      transaction: (name) => this.step(name) as Promise<never>,
      sleep: (_ms, name = 'sleep') => this.timer(name),
      sleepUntil: (_atMs, name = 'sleep') => this.timer(name),
      waitForSignal: (name) => {
        const recorded = this.claim('signal', name);
        if (recorded?.status !== 'completed') return parked();
        return Promise.resolve(
          recorded.signalId === undefined
            ? { received: false as const }
            : {
                received: true as const,
                payload: recorded.result ?? null,
                signalId: recorded.signalId,
              },
        );
      },
      child: (flow) => {
        const index = this.cursor;
        const recorded = this.claim('child', flow.name);
        if (recorded?.status === 'completed') return Promise.resolve(recorded.result as never);
        if (recorded?.status === 'failed') {
          const status = recorded.cancelled === true ? 'cancelled' : 'failed';
          return Promise.reject(
            new LoomError(
              KernelErrorCode.CHILD_FAILED,
              `child execution ${recorded.childId ?? ''} of ${state.executionId} ` +
                `${status === 'cancelled' ? 'was cancelled' : 'failed'}: ${recorded.error?.message ?? ''}`,
              {
                executionId: state.executionId,
                childId: recorded.childId ?? '',
                status,
                error: (recorded.error ?? null) as never,
                stepIndex: index,
              },
            ),
          );
        }
        return parked();
      },
      // The successor has its own log: this one ends here.
      continueAsNew: () => parked(),
      now: () => this.value('now', () => this.clock.now()) as number,
      random: () => this.value('random', () => Math.random()) as number,
      uuid: () => this.value('uuid', () => randomUUID()) as string,
      patched: (id) => {
        const recorded = state.steps[this.cursor];
        if (recorded?.kind === 'patch' && recorded.name === id) {
          this.cursor++;
          return true;
        }
        if (recorded !== undefined) return false;
        // Unrecorded: a driver would mark it here and take the new path.
        this.cursor++;
        return true;
      },
    };
  }

  private timer(name: string): Promise<void> {
    const recorded = this.claim('timer', name);
    return recorded?.status === 'completed' ? Promise.resolve() : parked();
  }
}
