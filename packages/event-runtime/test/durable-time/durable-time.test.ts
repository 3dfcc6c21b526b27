import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killTestProcesses, spawnTestProcess } from '../../src/testing.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-durable-time-'));
const worker = join(import.meta.dirname, 'timer-worker.ts');
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

const node = (args: string[]) => spawnTestProcess(worker, { args });

describe('durable time and signals across real processes (SQLite)', () => {
  it('a sleeping execution survives a SIGKILL and wakes on time in a new process', async () => {
    const db = join(directory, 'sleep.db');
    const first = node(['sleep-start', db, 'sleep-1']);
    await first.fact('suspended');
    await first.kill();
    const second = node(['serve', db, 'sleep-1']);
    const { result, timerFired } = (await second.fact('result')) as {
      result: { wakeAtMs: number; wokeAtMs: number };
      timerFired: number;
    };
    expect((await second.ended()).code).toBe(0);
    expect(result.wokeAtMs).toBeGreaterThanOrEqual(result.wakeAtMs);
    // Woken by the new process's timer service when due (one claim), not by a later manual
    // step. (Counted, not timed: under load the wake-up may come seconds after its time.)
    expect(timerFired).toBe(1);
  }, 60_000);

  it('a signal sent from a second process wakes a suspended execution on the first', async () => {
    const db = join(directory, 'signal.db');
    const waiting = node(['wait-start', db, 'wait-1']);
    await waiting.fact('suspended');
    const sender = node([
      'send',
      db,
      'wait-1',
      JSON.stringify({ approved: true, by: 'second process' }),
    ]);
    expect(await sender.fact('sent')).toMatchObject({ duplicate: false, signalId: 1 });
    expect((await sender.ended()).code).toBe(0);
    expect(await waiting.fact('result')).toEqual({
      fact: 'result',
      result: { approved: true, by: 'second process' },
    });
    expect((await waiting.ended()).code).toBe(0);
  }, 60_000);
});
