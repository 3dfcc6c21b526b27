import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fanoutIdealMs, runFanoutCell, runLengthCell } from './agent-cell.js';
import { lengthSummaryLine, perTurn } from './agent-suite.js';

const dir = mkdtempSync(join(tmpdir(), 'h-agent-limits-bench-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('bench:agents cells (counts, not times)', () => {
  it('P6: every run completes with 2 model calls and 1 tool call, never more in flight than asked', async () => {
    const result = await runFanoutCell(
      { kind: 'memory' },
      { runs: 60, inFlight: 15, latencyMs: 0 },
    );
    expect(result).toMatchObject({
      runs: 60,
      completed: 60,
      modelCalls: 120,
      toolCalls: 60,
      maxInFlight: 15,
      idealMs: 0,
    });
    expect(result.events).toBe(result.eventsPerRun * 60);
    expect(result.eventsPerRun).toBeGreaterThan(0);
    expect(fanoutIdealMs(20_000, 5_000, 50)).toBe(400);
    expect(fanoutIdealMs(2_000, 500, 50)).toBe(400);
  });

  it('P6 on a SQLite file writes the same events per run as on memory', async () => {
    const memory = await runFanoutCell({ kind: 'memory' }, { runs: 8, inFlight: 4, latencyMs: 0 });
    const sqlite = await runFanoutCell(
      { kind: 'sqlite', directory: dir, name: 'p6' },
      { runs: 8, inFlight: 4, latencyMs: 0 },
    );
    expect(sqlite.eventsPerRun).toBe(memory.eventsPerRun);
    expect(sqlite.completed).toBe(8);
  });

  it('P6 with a warm-up counts only the measured runs and calls onMeasure once, between them', async () => {
    let measuring = -1;
    const plain = await runFanoutCell({ kind: 'memory' }, { runs: 6, inFlight: 3, latencyMs: 0 });
    const warmed = await runFanoutCell(
      { kind: 'memory' },
      {
        runs: 6,
        inFlight: 3,
        latencyMs: 0,
        warmupRuns: 5,
        onMeasure: async () => {
          measuring++;
        },
      },
    );
    expect(measuring).toBe(0);
    expect(warmed).toMatchObject({ runs: 6, completed: 6, modelCalls: 22, toolCalls: 11 });
    expect(warmed.eventsPerRun).toBe(plain.eventsPerRun);
    expect(warmed.events).toBe(plain.events);
  });

  it('P7: a run of n turns makes n model calls and n − 1 tool calls; events per turn do not grow with n', async () => {
    const short = await runLengthCell(
      { kind: 'sqlite', directory: dir, name: 'p7-10' },
      { turns: 10, observationBytes: 16 },
    );
    const long = await runLengthCell(
      { kind: 'sqlite', directory: dir, name: 'p7-40' },
      { turns: 40, observationBytes: 16 },
    );
    expect(short).toMatchObject({ turns: 10, modelCalls: 10, toolCalls: 9 });
    expect(long).toMatchObject({ turns: 40, modelCalls: 40, toolCalls: 39 });
    // Each tool turn writes the same records; only the run's start and end are shared.
    const perToolTurn = (long.events - short.events) / 30;
    expect(Number.isInteger(perToolTurn)).toBe(true);
    expect(perTurn(long).events).toBeLessThan(perTurn(short).events + 1);
    const big = await runLengthCell(
      { kind: 'sqlite', directory: dir, name: 'p7-big' },
      { turns: 10, observationBytes: 8192 },
    );
    expect(big.bytes - short.bytes).toBeGreaterThanOrEqual(9 * (8192 - 16));
    const line = lengthSummaryLine(16, [
      { repeat: 0, result: short },
      { repeat: 0, result: { ...long, turns: 400 } },
    ]);
    expect(line).toMatch(
      /^P7 sqlite FULL, 16 B observations: per turn at 400 ÷ at 10: time .*, over 1 paired repeats$/,
    );
  });
});
