// view.show's timeline for retried steps, durable sleeps and signal timeouts, on a real SQLite
// file written by real flows.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '@loom/event-runtime/sqlite';
import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import { afterAll, expect, it } from 'vitest';
import { openView } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'loom-view-show-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('a retried step is one entry with its failed attempts; sleeps and timed-out waits have their times', async () => {
  const path = join(dir, 'show.db');
  let calls = 0;
  const flaky = defineFlow({ name: 'flaky' }, async (ctx) => {
    const value = await ctx.step(
      'fetch',
      () => {
        calls += 1;
        if (calls === 1) throw new Error('first attempt fails');
        return 'fetched';
      },
      { retry: { attempts: 3, backoff: { initialMs: 1, maxMs: 1 } } },
    );
    await ctx.sleep(5);
    const got = await ctx.waitForSignal('never', { timeout: 5 });
    return { value, received: got.received };
  });
  const runtime = createRuntime({ backend: openSqlite({ path, migrate: true }), flows: [flaky] });
  try {
    const handle = await runtime.start(flaky, null, { executionId: 'flaky-1' });
    expect(await handle.result()).toEqual({ value: 'fetched', received: false });
  } finally {
    await runtime.shutdown();
  }
  const view = await openView({ db: `sqlite:${path}` });
  try {
    const detail = await view.show('flaky-1');
    expect(detail.timeline.map((e) => [e.kind, e.name, e.status, e.failedAttempts])).toEqual([
      ['step', 'fetch', 'completed', 1],
      ['sleep', expect.any(String), 'completed', 0],
      ['wait', 'never', 'timed_out', 0],
    ]);
    const [, sleep, wait] = detail.timeline;
    expect(sleep?.dueAtMs).toBeGreaterThanOrEqual(sleep?.startedAtMs ?? Number.POSITIVE_INFINITY);
    expect(wait?.dueAtMs).not.toBeNull();
    for (const entry of detail.timeline) expect(entry.endedAtMs).not.toBeNull();
    expect(detail.run).toMatchObject({
      status: 'completed',
      steps: 1,
      terminalReason: 'completed',
    });
  } finally {
    await view.close();
  }
});

it('a record (ctx.record: no start) is one step entry, opened and closed by its outcome, and counted once', async () => {
  const path = join(dir, 'records.db');
  const decided = defineFlow({ name: 'decided' }, async (ctx) => {
    const route = await ctx.record('route', () => 'manual');
    const shipped = await ctx.step('ship', () => `shipped ${route}`);
    let verdict = 'none';
    try {
      await ctx.record('verdict', () => {
        throw new Error('no verdict');
      });
    } catch {
      verdict = 'failed';
    }
    return { shipped, verdict };
  });
  const runtime = createRuntime({ backend: openSqlite({ path, migrate: true }), flows: [decided] });
  try {
    const handle = await runtime.start(decided, null, { executionId: 'decided-1' });
    expect(await handle.result()).toEqual({ shipped: 'shipped manual', verdict: 'failed' });
  } finally {
    await runtime.shutdown();
  }
  const view = await openView({ db: `sqlite:${path}` });
  try {
    const detail = await view.show('decided-1');
    expect(detail.timeline.map((e) => [e.kind, e.name, e.status])).toEqual([
      ['step', 'route', 'completed'],
      ['step', 'ship', 'completed'],
      ['step', 'verdict', 'failed'],
    ]);
    const [route] = detail.timeline;
    expect(route?.result).toBe('manual');
    expect(route?.durationMs).toBe(0);
    expect(detail.run).toMatchObject({ status: 'completed', steps: 3 });
    // The runs list agrees (the projections' batch fold is checked against it in projections.test.ts).
    const { runs } = await view.runs();
    expect(runs.find((run) => run.id === 'decided-1')?.steps).toBe(3);
  } finally {
    await view.close();
  }
});
