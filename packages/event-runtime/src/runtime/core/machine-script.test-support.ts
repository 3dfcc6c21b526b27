// Helpers of the machine's tests: a state folded from scripted events, a machine over it, and
// what it queued, taken out of its queue. The machine alone: scripted calls in, commands and
// answers out, no store, no clock, no node.
import { expect } from 'vitest';
import type { JsonValue, StoredEvent } from '../../envelope.js';
import { type CommandSink, ExecutionMachine } from './execution-machine.js';
import { type ExecutionState, foldEvent } from './execution-state.js';
import { EventType } from './kernel-events.js';

/** The id of the execution every scripted machine drives. */
export const executionId = 'ex-1';

/** The state folded from `execution.started` and then `events` (type and payload each). */
export function folded(events: readonly [string, JsonValue][] = []): ExecutionState {
  let state: ExecutionState | undefined;
  const all: [string, JsonValue][] = [
    [EventType.executionStarted, { flow: 'f', version: null, input: { n: 1 } }],
    ...events,
  ];
  all.forEach(([type, payload], sequence) => {
    const event: StoredEvent = {
      executionId,
      sequence,
      type,
      payload,
      at: 0,
      position: sequence,
      prevHash: null,
      hash: '',
    };
    state = foldEvent(state, event);
  });
  return state as ExecutionState;
}

const settings = { keepResults: false, stepInterruptionsMax: 2, inlineWaitMs: 1_000 };

/**
 * A machine over `state`, with results not kept, a step poisoned at its third interruption, and
 * waits of up to 1 s kept in memory.
 */
export function machineOver(state: ExecutionState, keepResults = false): ExecutionMachine {
  return new ExecutionMachine(state, { ...settings, keepResults });
}

/** A command as the tests see it: its kind and its arguments. */
export type Command =
  | { kind: 'append'; type: string; payload: JsonValue; payloadText: string | undefined }
  | {
      kind: 'status';
      status: string;
      wakeAtMs: number | null;
      wakeOnSignalsAfter: number | undefined;
    }
  | { kind: 'flushSoon' }
  | { kind: 'barrier'; upTo: number }
  | { kind: 'runEffect'; op: number; attempt: number }
  | { kind: 'runTransaction'; op: number }
  | { kind: 'failOperation'; op: number; error: unknown }
  | { kind: 'armTimer'; op: number; wakeAtMs: number }
  | { kind: 'readInbox'; op: number; afterSignalId: number }
  | { kind: 'startChild'; op: number; childId: string; input: JsonValue }
  | { kind: 'lookupChild'; op: number; childId: string }
  | { kind: 'startSuccessor'; op: number; successorId: string; input: JsonValue }
  | { kind: 'acquireLane'; op: number }
  | { kind: 'releaseLane'; op: number }
  | { kind: 'complete'; op: number; value?: unknown };

/** The machine's queued commands, taken out of its queue. */
export function commandsOf(machine: ExecutionMachine): Command[] {
  const taken: Command[] = [];
  const sink: CommandSink = {
    record: (type, payload, payloadText) =>
      taken.push({ kind: 'append', type, payload, payloadText }),
    setStatus: (status, wakeAtMs, wakeOnSignalsAfter) =>
      void taken.push({ kind: 'status', status, wakeAtMs, wakeOnSignalsAfter }),
    flushSoon: () => void taken.push({ kind: 'flushSoon' }),
    barrier: (upTo) => void taken.push({ kind: 'barrier', upTo }),
    runEffect: (op, attempt) => void taken.push({ kind: 'runEffect', op, attempt }),
    runTransaction: (op) => void taken.push({ kind: 'runTransaction', op }),
    failOperation: (op, error) => void taken.push({ kind: 'failOperation', op, error }),
    armTimer: (op, wakeAtMs) => void taken.push({ kind: 'armTimer', op, wakeAtMs }),
    readInbox: (op, afterSignalId) => void taken.push({ kind: 'readInbox', op, afterSignalId }),
    startChild: (op, childId, input) => void taken.push({ kind: 'startChild', op, childId, input }),
    lookupChild: (op, childId) => void taken.push({ kind: 'lookupChild', op, childId }),
    startSuccessor: (op, successorId, input) =>
      void taken.push({ kind: 'startSuccessor', op, successorId, input }),
    acquireLane: (op) => void taken.push({ kind: 'acquireLane', op }),
    releaseLane: (op) => void taken.push({ kind: 'releaseLane', op }),
    complete: (op, value) =>
      void taken.push(
        value === undefined ? { kind: 'complete', op } : { kind: 'complete', op, value },
      ),
  };
  machine.drain(sink);
  expect(machine.pending).toBe(false);
  return taken;
}

/** The machine's queued commands, every one an append, as `[type, payload]` pairs. */
export function drained(machine: ExecutionMachine): [string, JsonValue][] {
  return commandsOf(machine).map((command) => {
    if (command.kind !== 'append') throw new Error(`expected an append, got ${command.kind}`);
    // A payload encoded once is stored as that text: it must be the payload's own JSON.
    if (command.payloadText !== undefined)
      expect(JSON.parse(command.payloadText)).toEqual(command.payload);
    return [command.type, command.payload];
  });
}

/** A seeded generator (mulberry32): the same script for the same seed. */
export function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
