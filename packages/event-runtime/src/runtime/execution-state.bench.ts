import { bench, describe } from 'vitest';
import type { StoredEvent } from '../envelope.js';
import { type ExecutionState, foldEvent } from './execution-state.js';

// A 500-step execution: 1,002 events, the shapes a fold meets most (ADR 0017).
const executionId = 'bench-fold';
const events: StoredEvent[] = [];
const push = (type: string, payload: StoredEvent['payload']) =>
  events.push({
    executionId,
    sequence: events.length,
    type,
    payload,
    at: 0,
    position: events.length,
    prevHash: null,
    hash: '',
  });
push('execution.started', { flow: 'f', version: null, input: { a: 1 } });
for (let index = 0; index < 500; index++) {
  push('step.started', { index, name: `s${index}` });
  push('step.completed', { index, name: `s${index}`, result: { ok: index } });
}
push('execution.completed', { output: 1 });

describe('foldEvent, a 1,002-event log', () => {
  bench('fold with per-type shape checks', () => {
    let state: ExecutionState | undefined;
    for (const event of events) state = foldEvent(state, event);
  });
});
