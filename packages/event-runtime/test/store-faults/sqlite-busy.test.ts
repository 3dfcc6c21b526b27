// A lock another connection holds on the SQLite file when a step's result is appended: the append
// fails with SQLITE_BUSY (STORE_BUSY) once the busy timeout passes. Nothing of it was written, so
// the same events are sent again after a backoff; the returned result must not be lost, nor the
// effect run again (issue 27, item 9).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import type { Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { SqliteEventStore } from '../../src/sqlite.js';
import { until } from '../../src/testing/until.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-sqlite-busy-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

it('a step result appended while another connection holds the write lock is appended once the lock goes: the effect ran once', async () => {
  const path = join(directory, 'busy.db');
  const store = SqliteEventStore.open({ path, migrate: true, busyTimeoutMs: 50 });
  const locker = new Database(path);
  let calls = 0;
  const flow: Flow<null, string> = {
    name: 'busy',
    run: (ctx) =>
      ctx.step('call', () => {
        calls += 1;
        // Another process takes the write lock as the call returns: its result's append waits.
        if (calls === 1) locker.exec('BEGIN IMMEDIATE');
        return `done on call ${calls}`;
      }),
  };
  const runtime = createKernelRuntime({
    store,
    flows: [flow as Flow<never, unknown>],
    timerPollMs: 0,
    recoverEveryMs: 0,
    storeRetryDelayMs: 20,
    onError: () => undefined,
  });
  const retried: number[] = [];
  runtime.events.on('append:retried', (event) => retried.push(event.attempt));
  try {
    const handle = await runtime.start(flow, null, { executionId: 'busy-1' });
    // The lock goes once the append has been refused: retried, or (before the fix) the driver
    // stopped on the refusal.
    await until(
      () => retried.length > 0 || !runtime.activeExecutions.includes('busy-1'),
      'the append of the result to be refused as busy',
    );
    locker.exec('ROLLBACK');
    expect(await handle.result()).toBe('done on call 1');
    expect(calls).toBe(1);
    expect(retried[0]).toBe(1);
    const types = (await store.read('busy-1')).map((event) => event.type);
    expect(types).toEqual([
      'execution.started',
      'step.started',
      'step.completed',
      'execution.completed',
    ]);
  } finally {
    if (locker.inTransaction) locker.exec('ROLLBACK');
    locker.close();
    await runtime.shutdown();
    await store.close();
  }
});
