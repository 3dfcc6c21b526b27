import { type EventEnvelope, InMemoryEventStore, type JsonValue } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { Recorder } from './internal/recorder.js';
import { checkInvariants } from './invariants.js';

/** Writes `events` as one execution's log and runs the checker over the store. */
async function check(
  events: Array<[type: string, payload: JsonValue, atMs?: number]>,
  recorder = new Recorder(),
) {
  const clock = new ManualClock();
  const store = new InMemoryEventStore({ clock });
  const envelopes: EventEnvelope[] = events.map(([type, payload, atMs], sequence) => ({
    executionId: 'x',
    sequence,
    type,
    payload,
    at: atMs ?? clock.now(),
  }));
  const last = envelopes.at(-1)?.type ?? '';
  const settled = ['execution.completed', 'execution.failed'].includes(last);
  await store.append(envelopes, settled ? { status: 'settled' } : {});
  recorder.ack(await store.read('x'));
  return checkInvariants({
    events: store,
    recorder,
    log: await store.readAll(),
    index: await store.findExecutions({}),
    mustSettle: [],
    nowMs: clock.now(),
    wakeGraceMs: 0,
  });
}

const started = ['execution.started', { flow: 'f', version: null, input: null }] as const;
const step = (type: string, index: number) =>
  [type, { index, name: `s${index}`, ...(type === 'step.completed' ? { result: index } : {}) }] as [
    string,
    JsonValue,
  ];
const completed = ['execution.completed', { output: null }] as [string, JsonValue];
const invariants = (violations: Array<{ invariant: string }>) => violations.map((v) => v.invariant);

describe('the invariant checker', () => {
  it('passes a plain flow of 2 steps written as 2n + 2 events', async () => {
    const log = [
      [...started] as [string, JsonValue],
      step('step.started', 0),
      step('step.completed', 0),
      step('step.started', 1),
      step('step.completed', 1),
      completed,
    ];
    expect(await check(log)).toEqual([]);
  });

  it('reports a plain flow with a step started twice (2n + 2 broken)', async () => {
    const log = [
      [...started] as [string, JsonValue],
      step('step.started', 0),
      step('step.started', 0),
      step('step.completed', 0),
      completed,
    ];
    expect(invariants(await check(log))).toContain('plain-2n+2');
  });

  it('passes a record (its outcome alone, marked) beside a step, and reports one recorded twice', async () => {
    const record = ['step.completed', { index: 0, name: 'plan', record: true, result: 1 }] as [
      string,
      JsonValue,
    ];
    const log = [
      [...started] as [string, JsonValue],
      record,
      step('step.started', 1),
      step('step.completed', 1),
      completed,
    ];
    expect(await check(log)).toEqual([]);
    const twice = [[...started] as [string, JsonValue], record, record, completed];
    expect(invariants(await check(twice))).toContain('plain-2n+2');
  });

  it('reports a timer that fired before it was due', async () => {
    const clock = new ManualClock();
    const dueMs = clock.now() + 5_000;
    const log: Array<[string, JsonValue, number?]> = [
      [...started] as [string, JsonValue],
      ['timer.scheduled', { index: 0, name: 'nap', wakeAtMs: dueMs }],
      ['timer.fired', { index: 0 }, dueMs - 1],
      completed,
    ];
    expect(invariants(await check(log))).toContain('timer-not-early');
  });

  it('reports an append at an epoch older than the fence (a zombie that got through)', async () => {
    const recorder = new Recorder();
    recorder.commit(
      'node-a',
      [{ executionId: 'x', sequence: 0, type: 'execution.started', payload: null }],
      { fenceEpoch: 0 },
    );
    recorder.advance('node-b', 'x', 1);
    recorder.commit(
      'node-a',
      [{ executionId: 'x', sequence: 1, type: 'step.started', payload: null }],
      { fenceEpoch: 0 },
    );
    expect(
      invariants(await check([[...started] as [string, JsonValue], completed], recorder)),
    ).toContain('one-owner-per-epoch');
  });

  it('reports two writers in one epoch', async () => {
    const recorder = new Recorder();
    recorder.commit(
      'node-a',
      [{ executionId: 'x', sequence: 0, type: 'execution.started', payload: null }],
      { fenceEpoch: 2 },
    );
    recorder.commit(
      'node-b',
      [{ executionId: 'x', sequence: 1, type: 'step.started', payload: null }],
      { fenceEpoch: 2 },
    );
    expect(
      invariants(await check([[...started] as [string, JsonValue], completed], recorder)),
    ).toContain('one-owner-per-epoch');
  });

  it('reports a queue claimed past its concurrency limit', async () => {
    const recorder = new Recorder();
    recorder.claims.push({ queue: 'q', claimedNow: 3, concurrencyMax: 2, keys: [], atMs: 0 });
    expect(
      invariants(await check([[...started] as [string, JsonValue], completed], recorder)),
    ).toEqual(['queue-limit']);
  });

  it('reports a key claimed past its own limit (per-key concurrency)', async () => {
    const recorder = new Recorder();
    recorder.claims.push({
      queue: 'q',
      claimedNow: 2,
      concurrencyMax: undefined,
      keys: [
        { key: 'tenant-a', claimed: 1, limit: 1 },
        { key: 'tenant-b', claimed: 2, limit: 1 },
      ],
      atMs: 0,
    });
    expect(
      invariants(await check([[...started] as [string, JsonValue], completed], recorder)),
    ).toEqual(['key-limit']);
  });

  it('reports a throttle key claimed past its count within its window', async () => {
    const recorder = new Recorder();
    recorder.claims.push({
      queue: 'q',
      claimedNow: 1,
      concurrencyMax: undefined,
      keys: [],
      throttles: [
        { key: 'tenant-a', started: 2, limit: 2 },
        { key: 'tenant-b', started: 3, limit: 2 },
      ],
      atMs: 0,
    });
    expect(
      invariants(await check([[...started] as [string, JsonValue], completed], recorder)),
    ).toEqual(['throttle-limit']);
  });

  it('reports a debounced item claimed with a stale input, before it was due, or updated after its claim', async () => {
    const recorder = new Recorder();
    recorder.claims.push({
      queue: 'q',
      claimedNow: 3,
      concurrencyMax: undefined,
      keys: [],
      debounced: [
        { itemId: 'fine', lastInput: true, due: true },
        { itemId: 'stale', lastInput: false, due: true },
        { itemId: 'early', lastInput: true, due: false },
      ],
      atMs: 0,
    });
    recorder.debounced.set('late', { lastInput: '1', claimed: true, appliedAfterClaim: 1 });
    expect(
      invariants(await check([[...started] as [string, JsonValue], completed], recorder)),
    ).toEqual(['debounce-last-input', 'debounce-last-input', 'debounce-last-input']);
  });

  it('reports a running execution that neither ended nor waits', async () => {
    expect(
      invariants(await check([[...started] as [string, JsonValue], step('step.started', 0)])),
    ).toEqual(['execution-ended']);
  });

  it('reports an execution failed by a transient store error, not one failed by its flow', async () => {
    const failedWith = (code: string) =>
      ['execution.failed', { error: { name: 'LoomError', message: 'm', code } }] as [
        string,
        JsonValue,
      ];
    expect(
      invariants(await check([[...started] as [string, JsonValue], failedWith('STORE_BUSY')])),
    ).toEqual(['no-fail-on-transient-store-error']);
    expect(
      await check([[...started] as [string, JsonValue], failedWith('EXECUTION_FAILED')]),
    ).toEqual([]);
  });
});
