// The durability contract as a property of the machine's commands (ADR 0046): an effect runs only
// on `runEffect` (a transaction's work on `runTransaction`), and the machine emits it only after
// the `durable` input that covers the step's start record (`step.started`, `step.attempt_started`
// or `step.interrupted`). Scripted inputs, no store, no clock, no node.
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../envelope.js';
import { ErrorCode, LoomError } from '../../errors.js';
import type { Claim, ExecutionMachine } from './execution-machine.js';
import { EventType } from './kernel-events.js';
import {
  type Command,
  commandsOf,
  folded,
  generator,
  machineOver,
} from './machine-script.test-support.js';
import {
  attemptThrew,
  effectReturned,
  nextAttempt,
  stepInterrupted,
  stepStarted,
  transactionCompleted,
} from './step-records.js';

const startRecords = new Set<string>([
  EventType.stepStarted,
  EventType.stepAttemptStarted,
  EventType.stepInterrupted,
]);

/**
 * The shell's side of a script: carries out the machine's commands the way the node does (each
 * append takes the journal's next sequence), and checks every `runEffect` against the appends
 * made and the `durable` inputs fed so far.
 */
class ScriptedShell {
  /** The sequence the journal gives the next append. */
  nextSequence: number;
  /** The highest `upTo` a `durable` input reported (everything up to it is in the log). */
  durableUpTo = -1;
  /** The highest `upTo` a `barrier` command asked for. */
  barrierUpTo = -1;
  /** Per op: the sequence of its latest start record, as appended. */
  readonly startedAt = new Map<number, number>();
  /** Per op: the attempts run, in order. */
  readonly ran = new Map<number, number[]>();
  readonly failed: { op: number; error: unknown }[] = [];
  readonly log: Command[] = [];

  constructor(readonly machine: ExecutionMachine) {
    this.nextSequence = machine.lastSequence + 1;
  }

  /** Drains the machine's commands and checks each (an effect's start record durable before it). */
  drain(): void {
    for (const command of commandsOf(this.machine)) {
      this.log.push(command);
      if (command.kind === 'append') {
        const sequence = this.nextSequence++;
        if (startRecords.has(command.type))
          this.startedAt.set((command.payload as { index: number }).index, sequence);
      } else if (command.kind === 'barrier') {
        // The machine's numbering is the journal's: a barrier asks for what was appended.
        expect(command.upTo).toBeLessThan(this.nextSequence);
        this.barrierUpTo = Math.max(this.barrierUpTo, command.upTo);
      } else if (command.kind === 'runEffect' || command.kind === 'runTransaction') {
        const started = this.startedAt.get(command.op);
        expect(started, `op ${command.op} ran with no start record`).toBeDefined();
        expect(
          this.durableUpTo,
          `op ${command.op} ran before its start record (sequence ${started}) was durable`,
        ).toBeGreaterThanOrEqual(started as number);
        const attempts = this.ran.get(command.op) ?? [];
        attempts.push(command.kind === 'runEffect' ? command.attempt : 0);
        this.ran.set(command.op, attempts);
      } else if (command.kind === 'failOperation') {
        this.failed.push({ op: command.op, error: command.error });
      }
    }
  }

  /** Input `durable`, as the journal would answer a barrier: up to `upTo`, never past it. */
  durable(upTo: number): void {
    expect(upTo).toBeLessThan(this.nextSequence);
    this.durableUpTo = Math.max(this.durableUpTo, upTo);
    this.machine.durable(upTo);
  }
}

describe("the machine's effect commands", () => {
  it('an effect runs on runEffect only after the durable input covering its step.started', () => {
    const machine = machineOver(folded());
    const claim = machine.claim('step', 'charge');
    stepStarted(machine, claim, undefined);
    machine.requestEffect(claim.index, nextAttempt(machine, claim));
    expect(commandsOf(machine)).toEqual([
      {
        kind: 'append',
        type: EventType.stepStarted,
        payload: { index: 0, name: 'charge' },
        payloadText: undefined,
      },
      // Sequence 0 is execution.started: the step's start is 1.
      { kind: 'barrier', upTo: 1 },
    ]);
    machine.durable(0);
    expect(commandsOf(machine)).toEqual([]);
    machine.durable(1);
    expect(commandsOf(machine)).toEqual([{ kind: 'runEffect', op: 0, attempt: 1 }]);
    // Granted once: another durable input runs nothing more.
    machine.durable(1);
    expect(commandsOf(machine)).toEqual([]);
  });

  it('a retried attempt waits for its step.attempt_started, an interrupted step for its step.interrupted', () => {
    const retry = { attempts: 3, retryable: undefined, delayMs: () => 100 };
    // Step 'a' was in flight when the node before this one died; step 'b' starts now.
    const machine = machineOver(folded([[EventType.stepStarted, { index: 0, name: 'a' }]]));
    const a = machine.claim('step', 'a');
    expect(stepInterrupted(machine, a)).toBeUndefined();
    machine.requestEffect(a.index, nextAttempt(machine, a));
    expect(commandsOf(machine).map((command) => command.kind)).toEqual(['append', 'barrier']);
    // execution.started 0, step.started 1 (logged), step.interrupted 2.
    machine.durable(1);
    expect(commandsOf(machine)).toEqual([]);
    machine.durable(2);
    expect(commandsOf(machine)).toEqual([{ kind: 'runEffect', op: 0, attempt: 1 }]);

    expect(attemptThrew(machine, a, 1, new Error('503'), retry, true, 0)).toBeUndefined();
    const attempt = nextAttempt(machine, a);
    machine.requestEffect(a.index, attempt);
    const commands = commandsOf(machine);
    expect(commands.map((command) => command.kind)).toEqual(['append', 'append', 'barrier']);
    expect(commands[1]).toMatchObject({ type: EventType.stepAttemptStarted });
    expect(commands[2]).toEqual({ kind: 'barrier', upTo: 4 });
    machine.durable(3);
    expect(commandsOf(machine)).toEqual([]);
    machine.durable(4);
    expect(commandsOf(machine)).toEqual([{ kind: 'runEffect', op: 0, attempt: 2 }]);
  });

  it('a transaction runs on runTransaction after its step.started is durable, and its step.completed takes the next sequence', () => {
    const machine = machineOver(folded());
    const claim = machine.claim('step', 'move');
    stepStarted(machine, claim, 'transactional');
    machine.requestEffect(claim.index, 0);
    expect(commandsOf(machine).at(-1)).toEqual({ kind: 'barrier', upTo: 1 });
    machine.durable(1);
    expect(commandsOf(machine)).toEqual([{ kind: 'runTransaction', op: 0 }]);
    // The store commits the completion with the work: sequence 2, outside the queue.
    transactionCompleted(machine, claim, { moved: 3 });
    expect(machine.lastSequence).toBe(2);
    const next = machine.claim('step', 'after');
    stepStarted(machine, next, undefined);
    machine.requestEffect(next.index, 1);
    expect(commandsOf(machine).at(-1)).toEqual({ kind: 'barrier', upTo: 3 });
  });

  it('an effect waiting for its barrier fails with why the execution stopped, never runs once the flow ended, and fails with the stop reason of a broken journal', () => {
    const cancelled = machineOver(folded());
    const a = cancelled.claim('step', 'a');
    stepStarted(cancelled, a, undefined);
    cancelled.requestEffect(a.index, 1);
    commandsOf(cancelled);
    const reason = cancelled.cancel('by test');
    cancelled.durable(1);
    expect(commandsOf(cancelled)).toEqual([{ kind: 'failOperation', op: 0, error: reason }]);

    const returned = machineOver(folded());
    const b = returned.claim('step', 'b');
    stepStarted(returned, b, undefined);
    returned.requestEffect(b.index, 1);
    commandsOf(returned);
    returned.endFlow();
    returned.durable(1);
    // Nothing could record the effect's outcome: it never runs and its step never settles.
    expect(commandsOf(returned)).toEqual([]);

    const fenced = machineOver(folded());
    for (const name of ['c', 'd']) {
      const claim = fenced.claim('step', name);
      stepStarted(fenced, claim, undefined);
      fenced.requestEffect(claim.index, 1);
    }
    commandsOf(fenced);
    const stale = new LoomError(ErrorCode.FENCE_STALE, 'stale fence', {});
    expect(fenced.appendFailed(stale)).toBe(true);
    const failed = commandsOf(fenced);
    expect(failed.map((command) => command.kind)).toEqual(['failOperation', 'failOperation']);
    for (const command of failed)
      expect(command).toMatchObject({ error: { code: ErrorCode.OWNERSHIP_LOST } });
    expect(fenced.stoppedBy?.code).toBe(ErrorCode.OWNERSHIP_LOST);
    // A later barrier's answer, whichever it is, runs nothing.
    fenced.durable(2);
    expect(fenced.appendFailed(stale)).toBe(false);
    expect(commandsOf(fenced)).toEqual([]);
  });

  it('a failed attempt waits for the durable covering its step.attempt_failed before its backoff (complete), or fails with why the execution must not go on', () => {
    const retry = { attempts: 3, retryable: undefined, delayMs: () => 100 };
    const machine = machineOver(folded());
    const claim = machine.claim('step', 'fetch');
    stepStarted(machine, claim, undefined);
    machine.requestEffect(claim.index, nextAttempt(machine, claim));
    machine.durable(1);
    commandsOf(machine);
    expect(attemptThrew(machine, claim, 1, new Error('503'), retry, true, 0)).toBeUndefined();
    machine.requestDurable(claim.index);
    expect(commandsOf(machine).map((command) => command.kind)).toEqual(['append', 'barrier']);
    // execution.started 0, step.started 1, step.attempt_failed 2.
    machine.durable(1);
    expect(commandsOf(machine)).toEqual([]);
    machine.durable(2);
    expect(commandsOf(machine)).toEqual([{ kind: 'complete', op: 0 }]);

    machine.requestDurable(claim.index);
    commandsOf(machine);
    const reason = machine.cancel('by test');
    machine.durable(2);
    expect(commandsOf(machine)).toEqual([{ kind: 'failOperation', op: 0, error: reason }]);

    const fenced = machineOver(folded());
    fenced.requestDurable(0);
    commandsOf(fenced);
    fenced.appendFailed(new LoomError(ErrorCode.FENCE_STALE, 'stale', {}));
    expect(commandsOf(fenced)).toMatchObject([
      { kind: 'failOperation', op: 0, error: { code: ErrorCode.OWNERSHIP_LOST } },
    ]);
  });

  it('an interrupted step asks for the lane, counts its interruption once it holds it, and gives it back', () => {
    const machine = machineOver(folded([[EventType.stepStarted, { index: 0, name: 'a' }]]));
    const a = machine.claim('step', 'a');
    machine.requestLane(a.index);
    expect(commandsOf(machine)).toEqual([{ kind: 'acquireLane', op: 0 }]);
    // Waiting for the lane is not in flight: a blocked wait may suspend meanwhile.
    machine.laneAcquired(a.index);
    expect(commandsOf(machine)).toEqual([{ kind: 'complete', op: 0 }]);
    expect(stepInterrupted(machine, a)).toBeUndefined();
    machine.requestEffect(a.index, nextAttempt(machine, a));
    machine.durable(2);
    effectReturned(machine, a, 'done', undefined);
    machine.requestDurable(a.index);
    expect(commandsOf(machine).map((command) => command.kind)).toEqual([
      'append',
      'barrier',
      'runEffect',
      'append',
      'barrier',
    ]);
    machine.durable(3);
    machine.releaseLane(a.index);
    expect(commandsOf(machine)).toEqual([
      { kind: 'complete', op: 0 },
      { kind: 'releaseLane', op: 0 },
    ]);
  });

  it('over 300 scripted interleavings of parallel steps, retries, interruptions and barriers, no runEffect precedes the durable covering its start record', () => {
    const retry = { attempts: 4, retryable: undefined, delayMs: () => 10 };
    let effectsRun = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const random = generator(seed);
      // Some scripts replay a log with steps left in flight (interrupted on resume).
      const inFlight = Math.floor(random() * 3);
      const logged: [string, JsonValue][] = [];
      for (let index = 0; index < inFlight; index++)
        logged.push([EventType.stepStarted, { index, name: `old-${index}` }]);
      const machine = machineOver(folded(logged));
      const shell = new ScriptedShell(machine);
      /** Ops asked to run and not granted yet, and ops granted whose effect has not settled. */
      const requested = new Map<number, number>();
      const running = new Map<number, { claim: Claim; attempt: number }>();
      const claims = new Map<number, Claim>();
      let replayed = 0;
      let started = 0;
      const request = (claim: Claim) => {
        const attempt = nextAttempt(machine, claim);
        machine.requestEffect(claim.index, attempt);
        requested.set(claim.index, attempt);
      };
      for (let turn = 0; turn < 40; turn++) {
        const roll = random();
        if (roll < 0.2 && replayed < inFlight) {
          const claim = machine.claim('step', `old-${replayed++}`);
          claims.set(claim.index, claim);
          if (stepInterrupted(machine, claim) === undefined) request(claim);
        } else if (roll < 0.4 && replayed === inFlight && started < 6) {
          const claim = machine.claim('step', `new-${started++}`);
          claims.set(claim.index, claim);
          stepStarted(machine, claim, undefined);
          request(claim);
        } else if (roll < 0.6) {
          shell.drain();
        } else if (roll < 0.8) {
          // The journal answers a barrier: up to any sequence it was asked for and had appended.
          const from = Math.max(shell.durableUpTo, 0);
          const to = Math.min(shell.barrierUpTo, shell.nextSequence - 1);
          if (to >= from) shell.durable(from + Math.floor(random() * (to - from + 1)));
        } else {
          // An effect that ran settles: it returns, or it throws and is retried.
          for (const [op, attempts] of shell.ran) {
            const attempt = attempts.at(-1) as number;
            if (requested.get(op) === attempt) {
              requested.delete(op);
              running.set(op, { claim: claims.get(op) as Claim, attempt });
            }
          }
          const [op, effect] = [...running][Math.floor(random() * running.size)] ?? [];
          if (op === undefined || effect === undefined) continue;
          running.delete(op);
          if (random() < 0.5 || effect.attempt >= retry.attempts) {
            effectReturned(machine, effect.claim, { op }, effect.attempt);
          } else {
            attemptThrew(machine, effect.claim, effect.attempt, new Error('503'), retry, true, 0);
            request(effect.claim);
          }
        }
      }
      // Everything asked for becomes durable: every requested attempt runs, once.
      shell.drain();
      shell.durable(shell.nextSequence - 1);
      shell.drain();
      expect(shell.failed).toEqual([]);
      for (const [op, attempt] of requested) expect(shell.ran.get(op)?.at(-1)).toBe(attempt);
      for (const attempts of shell.ran.values()) {
        expect(new Set(attempts).size).toBe(attempts.length);
        effectsRun += attempts.length;
      }
    }
    // The scripts exercised the rule: many effects ran.
    expect(effectsRun).toBeGreaterThan(600);
  });
});
