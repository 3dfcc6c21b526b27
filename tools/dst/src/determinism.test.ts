import { describe, expect, it } from 'vitest';
import { agentScenario } from './agent-scenario.js';
import { totalFaults } from './faults.js';
import { mixedScenario } from './mixed-scenario.js';
import { runSeed } from './run-seed.js';

describe('determinism', () => {
  it('the same seed twice writes byte-identical logs (hashes equal), with faults injected', async () => {
    const first = await runSeed(42, mixedScenario);
    const second = await runSeed(42, mixedScenario);
    expect(second.logHash).toBe(first.logHash);
    expect(second.faults).toEqual(first.faults);
    expect(second.events).toBe(first.events);
    expect(totalFaults(first.faults)).toBeGreaterThan(0);
    // Torn connections are drawn from the seed too: seed 42 tears some, the same ones twice.
    expect(first.faults.tornConnections).toBeGreaterThan(0);
  });

  it('the agent scenario: the same seed twice writes byte-identical logs, with faults injected', async () => {
    const first = await runSeed(42, agentScenario);
    const second = await runSeed(42, agentScenario);
    expect(first.violations).toEqual([]);
    expect(second.logHash).toBe(first.logHash);
    expect(second.faults).toEqual(first.faults);
    expect(second.stats).toEqual(first.stats);
    expect(totalFaults(first.faults)).toBeGreaterThan(0);
    expect(first.stats.modelCalls).toBeGreaterThan(0);
  });

  it('another seed writes another log (the hash covers what differs)', async () => {
    const a = await runSeed(1, mixedScenario);
    const b = await runSeed(2, mixedScenario);
    expect(b.logHash).not.toBe(a.logHash);
  });

  it('Math.random is the real one again after a seed', async () => {
    const real = Math.random;
    await runSeed(3, mixedScenario);
    expect(Math.random).toBe(real);
  });
});
