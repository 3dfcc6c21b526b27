import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { bench, describe } from 'vitest';
import type { StoredEvent } from '../../envelope.js';
import { type ExecutionState, foldEvent } from './execution-state.js';

/**
 * The fold of a log, this source's against an older build's when `LOOM_FOLD_BASELINE` names that
 * build's `dist` folder (`git worktree add /tmp/base <ref> && pnpm build` there, or a copy of a
 * `dist` taken before a change): both run in one process, side by side, on the same events. A
 * build from before ADR 0046's step 2 has the fold in `runtime/`, a later one in `runtime/core/`.
 */
type Fold = typeof foldEvent;
const baselineDist = process.env.LOOM_FOLD_BASELINE;
const baseline: Fold | undefined =
  baselineDist === undefined
    ? undefined
    : (
        (await import(
          pathToFileURL(
            existsSync(`${baselineDist}/runtime/core/execution-state.js`)
              ? `${baselineDist}/runtime/core/execution-state.js`
              : `${baselineDist}/runtime/execution-state.js`,
          ).href
        )) as {
          foldEvent: Fold;
        }
      ).foldEvent;

function log(executionId: string, write: (push: (type: string, payload: unknown) => void) => void) {
  const events: StoredEvent[] = [];
  write((type, payload) =>
    events.push({
      executionId,
      sequence: events.length,
      type,
      payload: payload as StoredEvent['payload'],
      at: 0,
      position: events.length,
      prevHash: null,
      hash: '',
    }),
  );
  return events;
}

// A 500-step execution: 1,002 events, the shapes a fold meets most (ADR 0017).
const steps = log('bench-fold', (push) => {
  push('execution.started', { flow: 'f', version: null, input: { a: 1 } });
  for (let index = 0; index < 500; index++) {
    push('step.started', { index, name: `s${index}` });
    push('step.completed', { index, name: `s${index}`, result: { ok: index } });
  }
  push('execution.completed', { output: 1 });
});

// 1,002 events of every operation kind: retried and failed steps, timers, signals, values,
// patches and children, each 10-event round writing 7 operations.
const mixed = log('bench-fold-mixed', (push) => {
  push('execution.started', { flow: 'f', version: 'v1', input: null, rootId: 'r', generation: 0 });
  let index = 0;
  for (let round = 0; round < 100; round++) {
    const error = { name: 'Error', message: 'boom', code: 'E' };
    push('step.started', { index, name: `s${index}` });
    push('step.attempt_failed', { index, name: `s${index}`, attempt: 1, error, retryAtMs: 5 });
    push('step.attempt_started', { index, name: `s${index}`, attempt: 2 });
    push('step.failed', { index, name: `s${index}`, error, attempts: 2 });
    index += 1;
    push('timer.scheduled', { index, name: 'sleep', wakeAtMs: 10 });
    push('timer.fired', { index: index++, name: 'sleep' });
    push('signal.waiting', { index, name: 'go', timeoutAtMs: null });
    push('signal.received', { index: index++, name: 'go', signalId: round + 1, payload: { x: 1 } });
    push('value.recorded', { index: index++, name: 'now', value: 1_700_000_000_000 });
    push('child.started', { index, name: 'c', childId: `c${index}` });
  }
  push('execution.completed', { output: null });
});

function fold(run: Fold, events: readonly StoredEvent[]): ExecutionState | undefined {
  let state: ExecutionState | undefined;
  for (const event of events) state = run(state, event);
  return state;
}

for (const [name, events] of [
  ['a 1,002-event log of plain steps', steps],
  ['a 1,002-event log of every operation kind', mixed],
] as const) {
  describe(`foldEvent, ${name}`, () => {
    bench('table-driven payload checks (this source)', () => {
      fold(foldEvent, events);
    });
    if (baseline !== undefined) {
      bench(`baseline build (${baselineDist})`, () => {
        fold(baseline, events);
      });
    }
  });
}
