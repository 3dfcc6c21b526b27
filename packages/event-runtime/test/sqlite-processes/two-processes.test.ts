// Two processes on one SQLite file (issue 14). Two real worker processes, each with its own
// runtime, start and drive executions on the same file at once and signal each other's
// executions; their busy timeout is short, so SQLITE_BUSY really happens. One of them is
// SIGKILLed in the middle of its writes and started again. Then: every execution ended exactly
// once with the right output, no worker died of an error (a STORE_BUSY a call returned is a typed
// error the worker retries; one the runtime meets in the background it retries itself),
// `PRAGMA integrity_check` says ok and `verify` passes for every execution.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/index.js';
import { SqliteEventStore } from '../../src/sqlite.js';
import { killTestProcesses, spawnTestProcess, type TestProcess } from '../../src/testing.js';

const worker = join(import.meta.dirname, 'two-process-worker.ts');
const directory = mkdtempSync(join(tmpdir(), 'loom-two-processes-'));
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

/** Executions of each kind each worker starts (so 4 × this in all). */
const perKind = 25;
/** The workers' busy timeout: short, so two writers really collide. */
const busyTimeoutMs = 2;
/** Longest the test waits for any one thing. */
const deadlineMs = 45_000;

interface Counts {
  startBusy: number;
  signalBusy: number;
  reported: Record<string, number>;
}

function startWorker(db: string, name: string, peer: string): TestProcess {
  return spawnTestProcess(worker, {
    name: `worker ${name}`,
    env: {
      LOOM_TP_DB: db,
      LOOM_TP_NAME: name,
      LOOM_TP_PEER: peer,
      LOOM_TP_COUNT: String(perKind),
      LOOM_TP_BUSY_MS: String(busyTimeoutMs),
    },
  });
}

/** The newest counts `worker` printed. */
function countsOf(worker: TestProcess): Counts {
  const last = worker
    .facts()
    .filter((fact) => fact.fact === 'counts')
    .at(-1);
  return (last as unknown as Counts | undefined) ?? { startBusy: 0, signalBusy: 0, reported: {} };
}

/** Polls `check` every 20 ms until it holds; fails after `deadlineMs`. */
async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  explain: () => Promise<string> = async () => '',
): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${await explain()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const terminalTypes = ['execution.completed', 'execution.failed', 'execution.cancelled'];
const terminal = (events: StoredEvent[]) =>
  events.filter((event) => terminalTypes.includes(event.type));

describe('two processes on one SQLite file', () => {
  it('both drive executions and signal each other through SQLITE_BUSY; one is SIGKILLed mid-write and restarted; every execution ends once, the file checks ok', async () => {
    const db = join(directory, 'shared.db');
    const store = SqliteEventStore.open({ path: db, migrate: true, busyTimeoutMs: 10_000 });
    const ids = ['a', 'b'].flatMap((name) =>
      Array.from({ length: perKind }, (_, index) => [
        `${name}-plain-${index}`,
        `${name}-sig-${index}`,
      ]).flat(),
    );
    const endedCount = async () => {
      let ended = 0;
      for (const id of ids) if (terminal(await store.read(id)).length > 0) ended += 1;
      return ended;
    };

    const a = startWorker(db, 'a', 'b');
    const b = startWorker(db, 'b', 'a');
    // Kill `a` while both write: some executions ended, most not yet.
    await until(
      async () => (await endedCount()) >= ids.length / 10,
      'a tenth of the executions to end',
    );
    const beforeKill = await endedCount();
    const aCounts = countsOf(a);
    const killedAtMs = Date.now();
    a.child.kill('SIGKILL');
    expect(await a.exit).toEqual({ code: null, signal: 'SIGKILL' });
    const restarted = startWorker(db, 'a', 'b');
    const peek = new Database(db, { readonly: true });
    const stuck = async () => {
      const lines: string[] = [];
      for (const id of ids) {
        const events = await store.read(id);
        if (terminal(events).length > 0) continue;
        const row = peek
          .prepare('SELECT status, wake_at_ms FROM loom_executions WHERE execution_id = ?')
          .get(id);
        const signals = peek
          .prepare('SELECT signal_id, at FROM loom_signals WHERE execution_id = ?')
          .all(id) as Array<{ signal_id: number; at: number }>;
        const relative = signals.map((signal) => `#${signal.signal_id}@${signal.at - killedAtMs}`);
        const log = events.map((event) => `${event.type}@${event.at - killedAtMs}`);
        lines.push(`${id}: ${log.join(' ')}; index ${JSON.stringify(row)}; signals ${relative}`);
      }
      const workers = [b, restarted].map(
        (w) => `${JSON.stringify(countsOf(w))} ${w.child.exitCode} ${w.stderr().slice(-2_000)}`,
      );
      return `\n${lines.join('\n')}\n${workers.join('\n')}`;
    };
    await until(async () => (await endedCount()) === ids.length, 'every execution to end', stuck);
    await until(
      () => restarted.facts().some((fact) => fact.fact === 'sent'),
      "the restarted worker's sends",
    );
    await until(() => b.facts().some((fact) => fact.fact === 'sent'), "b's sends");

    // Neither live worker died by itself (an unhandled STORE_BUSY would have ended it).
    expect(b.child.exitCode, b.stderr()).toBeNull();
    expect(restarted.child.exitCode, restarted.stderr()).toBeNull();
    b.child.kill('SIGTERM');
    restarted.child.kill('SIGTERM');
    expect(await b.exit).toEqual({ code: 0, signal: null });
    expect(await restarted.exit).toEqual({ code: 0, signal: null });
    // Only STORE_BUSY was reported in the background, and the runtime retried past it.
    for (const worker of [b, restarted]) {
      for (const code of Object.keys(countsOf(worker).reported)) expect(code).toBe('STORE_BUSY');
    }

    for (const id of ids) {
      const events = await store.read(id);
      const ends = terminal(events);
      expect(
        ends.map((event) => event.type),
        id,
      ).toEqual(['execution.completed']);
      const output = ends[0]?.payload as { output: unknown };
      if (id.includes('-plain-')) expect(output.output).toBe(`${id}:6`);
      else expect(output.output).toEqual({ from: id.startsWith('a-') ? 'b' : 'a' });
      const completedSteps = events.filter((event) => event.type === 'step.completed');
      const names = completedSteps.map((event) => (event.payload as { name: string }).name);
      expect(new Set(names).size, id).toBe(names.length); // no step completed twice
      expect(events.filter((event) => event.type === 'signal.received').length).toBe(
        id.includes('-sig-') ? 1 : 0,
      );
      expect((await store.verify(id)).ok, id).toBe(true);
    }
    await store.close();
    const check = new Database(db, { readonly: true });
    expect(check.pragma('integrity_check')).toEqual([{ integrity_check: 'ok' }]);
    check.close();

    const busy = (counts: Counts) => ({
      callerRetries: counts.startBusy + counts.signalBusy,
      background: counts.reported.STORE_BUSY ?? 0,
    });
    console.log(
      `two processes: ${ids.length} executions, ${beforeKill} ended before the SIGKILL; STORE_BUSY ` +
        `(calls retried by the caller / met by the runtime in the background): ` +
        `a before the kill ${JSON.stringify(busy(aCounts))}, a restarted ${JSON.stringify(busy(countsOf(restarted)))}, ` +
        `b ${JSON.stringify(busy(countsOf(b)))}`,
    );
  }, 60_000);
});
