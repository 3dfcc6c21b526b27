import { describe, expect, it } from 'vitest';
import { crossover, crossoverExecutions, writeShare } from './crossover-math.js';

describe('effect/write crossover', () => {
  it('write share is time inside append over append plus effect time', () => {
    expect(writeShare({ appendMsPerExecution: 3, effectMsPerExecution: 1 })).toBe(0.75);
    expect(writeShare({ appendMsPerExecution: 0, effectMsPerExecution: 0 })).toBe(1);
  });

  it('names the two latencies between which effects start to dominate', () => {
    expect(
      crossover([
        { effectMs: 5, share: 0.3 },
        { effectMs: 0, share: 1 },
        { effectMs: 1, share: 0.6 },
      ]),
    ).toBe('between 1 ms and 5 ms of effect latency');
    expect(crossover([{ effectMs: 0, share: 0.9 }])).toMatch(/writes dominate/);
  });

  it('runs fewer executions when effects are slow, always whole rounds of c = 32', () => {
    expect(crossoverExecutions(3000, 0)).toBe(3008);
    expect(crossoverExecutions(3000, 100)).toBe(480);
    expect(crossoverExecutions(3000, 25)).toBe(1920);
  });
});
