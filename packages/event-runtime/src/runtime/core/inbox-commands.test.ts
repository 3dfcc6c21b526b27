// The inbox on the machine's commands (ADR 0046, step 8): a signal wait asks for the inbox with
// `readInbox{op, afterSignalId}`, the signals read come back as the input `inboxRead`, and the
// machine keeps them and what its waits took. A signal is consumed once, however often a read
// returns it, and a replay answers from the record without reading. Scripted inputs, no store.
import { describe, expect, it } from 'vitest';
import type { JsonValue, StoredSignal } from '../../envelope.js';
import { ErrorCode, LoomError } from '../../errors.js';
import type { ExecutionMachine } from './execution-machine.js';
import { EventType } from './kernel-events.js';
import {
  type Command,
  commandsOf,
  executionId,
  folded,
  machineOver,
} from './machine-script.test-support.js';
import { replaySignal, signalOutcome, signalTimeoutAt } from './wait-records.js';

const signal = (signalId: number, name: string, payload: JsonValue = signalId) =>
  ({ executionId, signalId, name, payload, idempotencyKey: null, at: 0 }) satisfies StoredSignal;

/** The machine's queued commands, each also kept in `log`. */
function take(machine: ExecutionMachine, log: Command[]): Command[] {
  const commands = commandsOf(machine);
  log.push(...commands);
  return commands;
}

describe("the machine's inbox commands", () => {
  it('a signal is consumed once however often reads return it, and a replay answers from the record without a read', () => {
    const live = machineOver(folded());
    const log: Command[] = [];
    const first = live.claim('signal', 'go');
    signalTimeoutAt(live, first, undefined, 0);
    live.requestInbox(first.index);
    expect(take(live, log)).toEqual([
      {
        kind: 'append',
        type: EventType.signalWaiting,
        payload: { index: 0, name: 'go', timeoutAtMs: null },
        payloadText: undefined,
      },
      { kind: 'readInbox', op: 0, afterSignalId: 0 },
    ]);
    // Nothing is blocked: a read returning does not make the execution suspend.
    expect(live.inboxRead(first.index, [signal(1, 'go'), signal(2, 'other')])).toBe(false);
    expect(take(live, log)).toEqual([{ kind: 'complete', op: 0 }]);
    expect(signalOutcome(live, first, null, 0)).toEqual({
      received: true,
      payload: 1,
      signalId: 1,
    });

    // The next read starts after the newest one read; the store returns signal 1 again (an
    // overlapping read) and a new one: 1 is not taken twice.
    const second = live.claim('signal', 'go');
    signalTimeoutAt(live, second, undefined, 0);
    live.requestInbox(second.index);
    expect(take(live, log).at(-1)).toEqual({ kind: 'readInbox', op: 1, afterSignalId: 2 });
    live.inboxRead(second.index, [signal(1, 'go'), signal(3, 'go', { n: 3 })]);
    take(live, log);
    expect(signalOutcome(live, second, null, 0)).toMatchObject({ signalId: 3 });
    expect(live.inbox.read.map((read) => read.signalId)).toEqual([1, 2, 3]);

    // A third wait finds nothing, not even after a read: it blocks, guarded by the newest id.
    const third = live.claim('signal', 'go');
    signalTimeoutAt(live, third, undefined, 0);
    live.requestInbox(third.index);
    live.inboxRead(third.index, [signal(1, 'go'), signal(3, 'go')]);
    expect(signalOutcome(live, third, null, 0)).toBeUndefined();
    expect(live.block(null, live.inbox.newestSeen)).toBe(true);
    expect(live.endOfTurn()).toBe(true);
    expect(take(live, log).at(-1)).toMatchObject({ kind: 'status', wakeOnSignalsAfter: 3 });
    const appended = log.flatMap((command) =>
      command.kind === 'append' ? [[command.type, command.payload] as [string, JsonValue]] : [],
    );
    const received = appended.filter(([type]) => type === EventType.signalReceived);
    expect(received.map(([, payload]) => (payload as { signalId: number }).signalId)).toEqual([
      1, 3,
    ]);

    // Replayed: the received ones answer from the record and ask for no read; the log's taken
    // signals are the new machine's, so a read returning them again gives the blocked wait
    // nothing.
    const state = folded(appended);
    expect(state.consumedSignals).toEqual([1, 3]);
    const replay = machineOver(state, true);
    expect(replaySignal(replay, replay.claim('signal', 'go'))).toEqual({
      received: true,
      payload: 1,
      signalId: 1,
    });
    expect(replaySignal(replay, replay.claim('signal', 'go'))).toEqual({
      received: true,
      payload: { n: 3 },
      signalId: 3,
    });
    expect(replay.pending).toBe(false);
    const blocked = replay.claim('signal', 'go');
    expect(blocked.recorded?.status).toBe('started');
    replay.requestInbox(blocked.index);
    expect(commandsOf(replay)).toEqual([{ kind: 'readInbox', op: 2, afterSignalId: 0 }]);
    replay.inboxRead(blocked.index, [signal(1, 'go'), signal(3, 'go'), signal(4, 'go')]);
    commandsOf(replay);
    expect(signalOutcome(replay, blocked, null, 0)).toMatchObject({ signalId: 4 });
  });

  it('an inbox read in flight keeps the execution from suspending until its answer', () => {
    const live = machineOver(folded());
    const timer = live.claim('signal', 'a');
    signalTimeoutAt(live, timer, 5_000, 0);
    const waiting = live.claim('signal', 'b');
    signalTimeoutAt(live, waiting, undefined, 0);
    live.requestInbox(waiting.index);
    // The other wait blocks while the read runs: no suspension yet.
    expect(live.block(5_000)).toBe(false);
    expect(live.endOfTurn()).toBe(false);
    expect(live.inboxRead(waiting.index, [])).toBe(true);
    expect(live.endOfTurn()).toBe(true);
  });

  it('a failed read answered by an input: a transient store failure stops the machine and fails the wait with why; any other error is the wait’s', () => {
    const live = machineOver(folded());
    const claim = live.claim('signal', 'go');
    signalTimeoutAt(live, claim, undefined, 0);
    live.requestInbox(claim.index);
    commandsOf(live);
    const broken = new Error('the driver threw');
    expect(live.operationFailed(claim.index, broken, false)).toBe(false);
    expect(commandsOf(live)).toEqual([{ kind: 'failOperation', op: 0, error: broken }]);
    expect(live.stoppedBy).toBeUndefined();
    expect(live.ending).toBe(false);

    // Read again; the store is unavailable this time.
    live.requestInbox(claim.index);
    commandsOf(live);
    const unavailable = new LoomError(ErrorCode.STORE_UNAVAILABLE, 'connection lost', {});
    expect(live.operationFailed(claim.index, unavailable, true)).toBe(true);
    expect(commandsOf(live)).toEqual([{ kind: 'failOperation', op: 0, error: unavailable }]);
    expect(live.stoppedBy).toBe(unavailable);
    // Stopped: nothing more is claimed, and it never suspends.
    expect(() => live.claim('step', 'after')).toThrow(unavailable);
    expect(live.block(null, 0)).toBe(true);
    expect(live.endOfTurn()).toBe(false);
  });
});
