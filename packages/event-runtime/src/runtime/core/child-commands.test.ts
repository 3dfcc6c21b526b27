// Children and successors on the machine's commands (ADR 0046, step 8): a child starts on
// `startChild`, which the machine emits only after the `durable` input covering the parent's
// `child.started` (a crash in between must not leave a child its parent's log does not know); a
// continue-as-new's successor starts on `startSuccessor`, only once everything recorded before is
// durable; a child's outcome comes back through `lookupChild` and the input `childLookedUp`.
// Scripted inputs, no store, no clock, no node.
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../envelope.js';
import { ErrorCode, LoomError } from '../../errors.js';
import { childEnded, childIdOf, childStarted, replayChild, successorOf } from './child-records.js';
import { type ExecutionMachine, successorOp } from './execution-machine.js';
import { childMissing } from './execution-outcome.js';
import { EventType } from './kernel-events.js';
import {
  type Command,
  commandsOf,
  executionId,
  folded,
  generator,
  machineOver,
} from './machine-script.test-support.js';
import { stepStarted } from './step-records.js';

/**
 * The shell's side of a script: numbers the appends as the journal does, and checks every start
 * against the `durable` inputs fed so far: a child's against its `child.started`, a successor's
 * against everything appended before it was asked for.
 */
class ScriptedShell {
  nextSequence: number;
  durableUpTo = -1;
  barrierUpTo = -1;
  /** Per child op: the sequence of its `child.started`. */
  readonly recordedAt = new Map<number, number>();
  /** The last sequence appended when the successor's start was asked for. */
  successorAfter: number | undefined;
  /** Per op: how often it started. */
  readonly started = new Map<number, number>();
  readonly failed: { op: number; error: unknown }[] = [];
  readonly log: Command[] = [];

  constructor(readonly machine: ExecutionMachine) {
    this.nextSequence = machine.lastSequence + 1;
  }

  drain(): void {
    for (const command of commandsOf(this.machine)) {
      this.log.push(command);
      if (command.kind === 'append') {
        const sequence = this.nextSequence++;
        if (command.type === EventType.childStarted)
          this.recordedAt.set((command.payload as { index: number }).index, sequence);
      } else if (command.kind === 'barrier') {
        expect(command.upTo).toBeLessThan(this.nextSequence);
        this.barrierUpTo = Math.max(this.barrierUpTo, command.upTo);
      } else if (command.kind === 'startChild') {
        const recorded = this.recordedAt.get(command.op);
        expect(recorded, `child ${command.op} started with no child.started`).toBeDefined();
        expect(
          this.durableUpTo,
          `child ${command.op} started before its child.started (sequence ${recorded}) was durable`,
        ).toBeGreaterThanOrEqual(recorded as number);
        expect(command.childId).toBe(`${executionId}.${command.op}`);
        this.started.set(command.op, (this.started.get(command.op) ?? 0) + 1);
      } else if (command.kind === 'startSuccessor') {
        expect(command.op).toBe(successorOp);
        expect(
          this.durableUpTo,
          'the successor started before what its predecessor recorded was durable',
        ).toBeGreaterThanOrEqual(this.successorAfter as number);
        this.started.set(successorOp, (this.started.get(successorOp) ?? 0) + 1);
      } else if (command.kind === 'failOperation') {
        this.failed.push({ op: command.op, error: command.error });
      }
    }
  }

  durable(upTo: number): void {
    expect(upTo).toBeLessThan(this.nextSequence);
    this.durableUpTo = Math.max(this.durableUpTo, upTo);
    this.machine.durable(upTo);
  }
}

describe("the machine's child and successor commands", () => {
  it('a child starts on startChild only after the durable covering its child.started; its outcome comes back through lookupChild, and a replay answers from the record', () => {
    const machine = machineOver(folded());
    const claim = machine.claim('child', 'billing');
    const childId = childIdOf(claim, undefined, executionId);
    const input = childStarted(machine, claim, childId, { amount: 5 });
    machine.requestChildStart(claim.index, childId, input);
    expect(commandsOf(machine)).toEqual([
      {
        kind: 'append',
        type: EventType.childStarted,
        payload: { index: 0, name: 'billing', childId: 'ex-1.0' },
        payloadText: undefined,
      },
      { kind: 'barrier', upTo: 1 },
    ]);
    machine.durable(0);
    expect(commandsOf(machine)).toEqual([]);
    machine.durable(1);
    expect(commandsOf(machine)).toEqual([
      { kind: 'startChild', op: 0, childId: 'ex-1.0', input: { amount: 5 } },
    ]);
    // Started once: another durable input starts nothing more.
    machine.durable(1);
    expect(commandsOf(machine)).toEqual([]);
    expect(machine.childStarted(claim.index)).toBe(false);
    expect(commandsOf(machine)).toEqual([{ kind: 'complete', op: 0 }]);

    machine.requestChildLookup(claim.index, childId);
    expect(commandsOf(machine)).toEqual([{ kind: 'lookupChild', op: 0, childId: 'ex-1.0' }]);
    const outcome = { status: 'completed', output: { paid: true } } as const;
    machine.childLookedUp(claim.index, outcome);
    expect(commandsOf(machine)).toEqual([{ kind: 'complete', op: 0, value: outcome }]);
    expect(childEnded(machine, claim, childId, outcome)).toEqual({
      ok: true,
      output: { paid: true },
    });
    const completed = commandsOf(machine);
    expect(completed).toMatchObject([{ kind: 'append', type: EventType.childCompleted }]);

    const replay = machineOver(
      folded([
        [EventType.childStarted, { index: 0, name: 'billing', childId: 'ex-1.0' }],
        ...completed.map((command) =>
          command.kind === 'append'
            ? ([command.type, command.payload] as [string, JsonValue])
            : (undefined as never),
        ),
      ]),
    );
    expect(replayChild(replay, replay.claim('child', 'billing'))).toEqual({ paid: true });
    expect(replay.pending).toBe(false);
  });

  it('a child missing after a replay starts again, and a lookup in flight keeps the execution from suspending', () => {
    // The parent died between its child.started and the child's start.
    const machine = machineOver(
      folded([[EventType.childStarted, { index: 0, name: 'billing', childId: 'ex-1.0' }]]),
    );
    const claim = machine.claim('child', 'billing');
    expect(claim.recorded?.status).toBe('started');
    const other = machine.claim('timer', 'nap');
    machine.requestChildLookup(claim.index, 'ex-1.0');
    expect(machine.block(5_000)).toBe(false);
    expect(machine.endOfTurn()).toBe(false);
    machine.childLookedUp(claim.index, childMissing);
    expect(commandsOf(machine)).toEqual([
      { kind: 'lookupChild', op: 0, childId: 'ex-1.0' },
      { kind: 'complete', op: 0, value: childMissing },
    ]);
    // Its record is in the log: the start follows the next durable answer (nothing new to
    // cover) and keeps the execution in flight until it returns.
    machine.requestChildStart(claim.index, 'ex-1.0', { amount: 5 });
    expect(commandsOf(machine)).toEqual([{ kind: 'barrier', upTo: 1 }]);
    machine.durable(1);
    expect(commandsOf(machine)).toEqual([
      { kind: 'startChild', op: 0, childId: 'ex-1.0', input: { amount: 5 } },
    ]);
    expect(machine.endOfTurn()).toBe(false);
    expect(machine.childStarted(claim.index)).toBe(true);
    expect(machine.endOfTurn()).toBe(true);
    expect(other.index).toBe(1);
  });

  it('a start waiting for its barrier fails with why the execution must not go on, or the broken journal’s reason; a failed start stops the machine when the store failure is transient', () => {
    const cancelled = machineOver(folded());
    const a = cancelled.claim('child', 'a');
    childStarted(cancelled, a, 'ex-1.0', null);
    cancelled.requestChildStart(a.index, 'ex-1.0', null);
    commandsOf(cancelled);
    const reason = cancelled.cancel('by test');
    cancelled.durable(1);
    expect(commandsOf(cancelled)).toEqual([{ kind: 'failOperation', op: 0, error: reason }]);

    // The flow function ended: the child's record is in the log, so it still starts.
    const ended = machineOver(folded());
    const b = ended.claim('child', 'b');
    childStarted(ended, b, 'ex-1.0', null);
    ended.requestChildStart(b.index, 'ex-1.0', null);
    commandsOf(ended);
    ended.endFlow();
    ended.durable(1);
    expect(commandsOf(ended)).toEqual([
      { kind: 'startChild', op: 0, childId: 'ex-1.0', input: null },
    ]);

    const fenced = machineOver(folded());
    const c = fenced.claim('child', 'c');
    childStarted(fenced, c, 'ex-1.0', null);
    fenced.requestChildStart(c.index, 'ex-1.0', null);
    fenced.requestSuccessorStart('ex-1#1', null);
    commandsOf(fenced);
    expect(fenced.appendFailed(new LoomError(ErrorCode.FENCE_STALE, 'stale', {}))).toBe(true);
    const failed = commandsOf(fenced);
    expect(failed).toMatchObject([
      { kind: 'failOperation', op: 0, error: { code: ErrorCode.OWNERSHIP_LOST } },
      { kind: 'failOperation', op: successorOp, error: { code: ErrorCode.OWNERSHIP_LOST } },
    ]);
    fenced.durable(1);
    expect(commandsOf(fenced)).toEqual([]);
    // Nothing is in flight any more: a blocked wait may suspend (but a stopped machine never does).
    expect(fenced.block(null)).toBe(true);

    const unavailable = machineOver(folded());
    const d = unavailable.claim('child', 'd');
    childStarted(unavailable, d, 'ex-1.0', null);
    unavailable.requestChildStart(d.index, 'ex-1.0', null);
    unavailable.durable(1);
    commandsOf(unavailable);
    const lost = new LoomError(ErrorCode.STORE_UNAVAILABLE, 'connection lost', {});
    expect(unavailable.operationFailed(d.index, lost, true)).toBe(true);
    expect(commandsOf(unavailable)).toEqual([{ kind: 'failOperation', op: 0, error: lost }]);
    expect(unavailable.stoppedBy).toBe(lost);
  });

  it('the successor starts on startSuccessor only after everything recorded before is durable', () => {
    const machine = machineOver(folded());
    const step = machine.claim('step', 'last');
    stepStarted(machine, step, undefined);
    const { successorId, input } = successorOf(machine, { page: 2 });
    expect(successorId).toBe('ex-1#1');
    machine.requestSuccessorStart(successorId, input);
    expect(commandsOf(machine).at(-1)).toEqual({ kind: 'barrier', upTo: 1 });
    machine.durable(0);
    expect(commandsOf(machine)).toEqual([]);
    machine.durable(1);
    expect(commandsOf(machine)).toEqual([
      { kind: 'startSuccessor', op: successorOp, successorId: 'ex-1#1', input: { page: 2 } },
    ]);
    machine.successorStarted();
    expect(commandsOf(machine)).toEqual([{ kind: 'complete', op: successorOp }]);
  });

  it('over 300 scripted interleavings of parallel children, steps, a successor and barriers, no child starts before its child.started is durable, none before the records before a successor', () => {
    let childrenStarted = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const random = generator(seed);
      const machine = machineOver(folded());
      const shell = new ScriptedShell(machine);
      const asked = new Set<number>();
      let successorAsked = false;
      for (let turn = 0; turn < 40; turn++) {
        const roll = random();
        if (roll < 0.25 && asked.size < 6 && !successorAsked) {
          const claim = machine.claim('child', `child-${turn}`);
          const childId = childIdOf(claim, undefined, executionId);
          const input = childStarted(machine, claim, childId, { turn });
          machine.requestChildStart(claim.index, childId, input);
          asked.add(claim.index);
        } else if (roll < 0.35 && !successorAsked) {
          const claim = machine.claim('step', `step-${turn}`);
          stepStarted(machine, claim, undefined);
        } else if (roll < 0.4 && !successorAsked && turn > 20) {
          successorAsked = true;
          shell.successorAfter = machine.lastSequence;
          const { successorId, input } = successorOf(machine, { turn });
          machine.requestSuccessorStart(successorId, input);
        } else if (roll < 0.7) {
          shell.drain();
        } else {
          // The journal answers a barrier: up to any sequence it was asked for and had appended.
          const from = Math.max(shell.durableUpTo, 0);
          const to = Math.min(shell.barrierUpTo, shell.nextSequence - 1);
          if (to >= from) shell.durable(from + Math.floor(random() * (to - from + 1)));
        }
      }
      // Everything asked for becomes durable: every child and the successor start, once.
      shell.drain();
      shell.durable(shell.nextSequence - 1);
      shell.drain();
      expect(shell.failed).toEqual([]);
      for (const op of asked) expect(shell.started.get(op)).toBe(1);
      if (successorAsked) expect(shell.started.get(successorOp)).toBe(1);
      expect([...shell.started.keys()].filter((op) => op !== successorOp).length).toBe(asked.size);
      childrenStarted += asked.size;
    }
    // The scripts exercised the rule: many children started.
    expect(childrenStarted).toBeGreaterThan(600);
  });
});
