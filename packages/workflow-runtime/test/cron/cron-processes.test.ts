import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { killTestProcesses, spawnTestProcess, type TestProcess } from '@loom/event-runtime/testing';
import { afterAll, expect, it } from 'vitest';

const directory = mkdtempSync(join(tmpdir(), 'loom-cron-processes-'));
const workerFile = join(import.meta.dirname, 'cron-worker.ts');
/** A worker that has not said 'ready' by then is stuck: the test fails naming it. */
const readyDeadlineMs = 20_000;
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

function startWorker(
  db: string,
  effects: string,
): { child: TestProcess['child']; ready: Promise<unknown>; exited: Promise<unknown> } {
  const worker = spawnTestProcess(workerFile, { args: [db, effects], name: 'cron worker' });
  return {
    child: worker.child,
    ready: worker.line(/ready/, readyDeadlineMs),
    exited: worker.exit,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('three processes, one schedule, a restart during a due time: every occurrence fires exactly once', async () => {
  const db = join(directory, 'cron.db');
  const effects = join(directory, 'effects.log');
  writeFileSync(effects, '');
  const first = startWorker(db, effects);
  await first.ready;
  const others = [startWorker(db, effects), startWorker(db, effects)];
  await Promise.all(others.map((other) => other.ready));
  await sleep(2_500);
  // Kill whichever process is driving the schedule right now (the one holding its lease).
  const probe = SqliteEventStore.open({ path: db, readOnly: true });
  const lease = probe.database
    .prepare("SELECT owner FROM loom_leases WHERE execution_id = 'cron:every-second'")
    .get() as { owner: string } | undefined;
  probe.database.close();
  const all = [first, ...others];
  const victim =
    all.find((candidate) => lease?.owner.includes(`-${candidate.child.pid}-`)) ?? first;
  victim.child.kill('SIGKILL');
  await victim.exited;
  await sleep(1_200);
  const restarted = startWorker(db, effects);
  await restarted.ready;
  await sleep(3_000);
  for (const node of [...all, restarted])
    if (node.child.exitCode === null) node.child.kill('SIGKILL');
  await Promise.all([...all, restarted].map((node) => node.exited));

  const store = SqliteEventStore.open({ path: db, readOnly: true });
  const runs = new Map<number, string>();
  let after = 0;
  for (;;) {
    const page = await store.readAll({ afterPosition: after, limit: 1_000 });
    if (page.length === 0) break;
    after = page[page.length - 1]?.position as number;
    for (const event of page) {
      const match = /^cron:every-second:(\d+)$/.exec(event.executionId);
      if (match !== null && event.sequence === 0) runs.set(Number(match[1]), event.executionId);
    }
  }
  await store.close();
  const fired = [...runs.keys()].sort((a, b) => a - b);
  expect(fired.length).toBeGreaterThanOrEqual(6);
  // No occurrence missed, none twice: consecutive seconds from the first fire to the last.
  for (let index = 1; index < fired.length; index++)
    expect(fired[index]! - fired[index - 1]!).toBe(1_000);
  const lines = readFileSync(effects, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0);
  const perRun = new Map<string, number>();
  for (const line of lines) perRun.set(line, (perRun.get(line) ?? 0) + 1);
  // A run's effect is at-least-once: only the one SIGKILL may have repeated one.
  const repeats = [...perRun.values()].reduce((sum, count) => sum + count - 1, 0);
  expect(repeats).toBeLessThanOrEqual(1);
  for (const id of perRun.keys()) expect(id).toMatch(/^cron:every-second:\d+$/);
}, 60_000);
