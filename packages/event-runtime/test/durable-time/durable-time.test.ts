import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const directory = mkdtempSync(join(tmpdir(), 'loom-durable-time-'));
const worker = join(import.meta.dirname, 'timer-worker.ts');
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(directory, { recursive: true, force: true });
});

function node(args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', worker, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const facts: Array<Record<string, unknown>> = [];
  let buffered = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
      facts.push(JSON.parse(buffered.slice(0, newline)));
      buffered = buffered.slice(newline + 1);
    }
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const waitFor = async (fact: string) => {
    for (let attempt = 0; attempt < 3_000; attempt++) {
      const found = facts.find((candidate) => candidate.fact === fact);
      if (found !== undefined) return found;
      if (child.exitCode !== null && !facts.some((candidate) => candidate.fact === fact)) {
        throw new Error(`worker exited before '${fact}': ${stderr}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`worker never said '${fact}': ${stderr}`);
  };
  return { child, waitFor, exited };
}

describe('durable time and signals across real processes (SQLite)', () => {
  it('a sleeping execution survives a SIGKILL and wakes on time in a new process', async () => {
    const db = join(directory, 'sleep.db');
    const first = node(['sleep-start', db, 'sleep-1']);
    await first.waitFor('suspended');
    first.child.kill('SIGKILL');
    await first.exited;
    const second = node(['serve', db, 'sleep-1']);
    const { result, timerFired } = (await second.waitFor('result')) as {
      result: { wakeAtMs: number; wokeAtMs: number };
      timerFired: number;
    };
    expect(await second.exited).toBe(0);
    expect(result.wokeAtMs).toBeGreaterThanOrEqual(result.wakeAtMs);
    // Woken by the new process's timer service when due (one claim), not by a later manual
    // step. (Counted, not timed: under load the wake-up may come seconds after its time.)
    expect(timerFired).toBe(1);
  }, 60_000);

  it('a signal sent from a second process wakes a suspended execution on the first', async () => {
    const db = join(directory, 'signal.db');
    const waiting = node(['wait-start', db, 'wait-1']);
    await waiting.waitFor('suspended');
    const sender = node([
      'send',
      db,
      'wait-1',
      JSON.stringify({ approved: true, by: 'second process' }),
    ]);
    expect(await sender.waitFor('sent')).toMatchObject({ duplicate: false, signalId: 1 });
    expect(await sender.exited).toBe(0);
    expect(await waiting.waitFor('result')).toEqual({
      fact: 'result',
      result: { approved: true, by: 'second process' },
    });
    expect(await waiting.exited).toBe(0);
  }, 60_000);
});
