// The projections' batch fold counts each step once: a record (no step.started) by its outcome,
// and a step or record that `runtime.retry` reopened not again when it ends.
import type { JsonValue, StoredEvent } from '@loom/event-runtime';
import { describe, expect, it } from 'vitest';
import { foldBatch } from './fold-batch.js';

function log(id: string, events: Array<[string, JsonValue]>): StoredEvent[] {
  return events.map(([type, payload], sequence) => ({
    executionId: id,
    sequence,
    type,
    payload,
    at: 1_000 + sequence,
    position: sequence + 1,
    prevHash: null,
    hash: `h${sequence}`,
  }));
}

const started: [string, JsonValue] = [
  'execution.started',
  { flow: 'f', version: null, input: null },
];
const error = { name: 'Error', message: 'no' };

function stepsOf(events: StoredEvent[]): number | undefined {
  return foldBatch(events, { runs: new Map(), pendingApprovals: new Map() }).runs[0]?.steps;
}

describe('foldBatch counts steps', () => {
  it('a record by its outcome, a step by its start', () => {
    expect(
      stepsOf(
        log('a', [
          started,
          ['step.completed', { index: 0, name: 'plan', record: true, result: 1 }],
          ['step.started', { index: 1, name: 'ship' }],
          ['step.completed', { index: 1, name: 'ship', result: 2 }],
          ['execution.completed', { output: null }],
        ]),
      ),
    ).toBe(2);
  });

  it('a failed record that runtime.retry reopened, once', () => {
    expect(
      stepsOf(
        log('b', [
          started,
          ['step.failed', { index: 0, name: 'plan', record: true, error }],
          ['execution.failed', { error }],
          ['execution.retried', { stepIndex: 0, failedSequence: 2 }],
          ['step.completed', { index: 0, name: 'plan', record: true, result: 1 }],
          ['execution.completed', { output: null }],
        ]),
      ),
    ).toBe(1);
  });

  it('a failed step that runtime.retry reopened, once', () => {
    expect(
      stepsOf(
        log('c', [
          started,
          ['step.started', { index: 0, name: 'charge' }],
          ['step.failed', { index: 0, name: 'charge', error }],
          ['execution.failed', { error }],
          ['execution.retried', { stepIndex: 0, failedSequence: 3 }],
          ['step.attempt_started', { index: 0, name: 'charge', attempt: 1 }],
          ['step.completed', { index: 0, name: 'charge', result: 1 }],
          ['execution.completed', { output: null }],
        ]),
      ),
    ).toBe(1);
  });
});
