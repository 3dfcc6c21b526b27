import { describe, expect, it } from 'vitest';
import type { ModelCallUsage } from '../run-result.js';
import { RunCallsHandoff } from './run-calls.js';
import { type RunOutput, usageOf } from './run-memory.js';

const call = (turn: number, latencyMs: number): ModelCallUsage => ({
  turn,
  provider: 'stub',
  model: 'stub-1',
  inputTokens: 10,
  outputTokens: 5,
  cachedInputTokens: 0,
  costUsd: 0.001,
  latencyMs,
  fallbacks: [],
});

const outputOf = (calls: ModelCallUsage[]): RunOutput => ({
  reason: 'goal_completed',
  turns: calls.length,
  usage: usageOf(calls),
});

describe('RunCallsHandoff', () => {
  it('hands the calls to the waiter when the output is the one the flow made, and keeps nothing after', () => {
    const handoff = new RunCallsHandoff();
    const calls = [call(1, 40), call(2, 35)];
    handoff.want('r');
    handoff.offer('r', calls);
    expect(handoff.take('r', outputOf(calls))).toBe(calls);
    expect(handoff.size).toBe(0);
  });

  it('nobody waiting: an offer is dropped; an output that differs (another node re-ran a call) reads the log', () => {
    const handoff = new RunCallsHandoff();
    handoff.offer('r', [call(1, 40)]);
    expect(handoff.size).toBe(0);
    handoff.want('r');
    handoff.offer('r', [call(1, 40), call(2, 35)]);
    // The same turns, but one call took another time: not this flow's output.
    expect(handoff.take('r', outputOf([call(1, 40), call(2, 36)]))).toBeUndefined();
    handoff.want('r');
    handoff.offer('r', [call(1, 40)]);
    expect(handoff.take('r', outputOf([call(1, 40), call(2, 35)]))).toBeUndefined();
    handoff.want('r');
    expect(handoff.take('r', undefined)).toBeUndefined();
    expect(handoff.size).toBe(0);
  });

  it('two waiters for one run each get the calls, the first a copy of its own', () => {
    const handoff = new RunCallsHandoff();
    const calls = [call(1, 40)];
    handoff.want('r');
    handoff.want('r');
    handoff.offer('r', calls);
    const first = handoff.take('r', outputOf(calls));
    expect(first).toEqual(calls);
    expect(first).not.toBe(calls);
    expect(handoff.take('r', outputOf(calls))).toBe(calls);
    expect(handoff.size).toBe(0);
  });
});
