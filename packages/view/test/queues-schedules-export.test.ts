// `loom queues`, `loom schedules` and `loom export` (the CLI in process), against a SQLite file
// and Postgres populated by a real runtime (queued items, a schedule that has fired).
import type { QueueStats, StoredEvent } from '@loom/event-runtime';
import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScheduleSummary } from '../src/index.js';
import { dbTargets } from './db-targets.js';
import { eventually, loomInProcess } from './fixture.js';

const { targets, cleanup } = dbTargets('view-qse');
afterAll(cleanup);

const mail = defineFlow({ name: 'mail' }, async (ctx, input: { to: string }) =>
  ctx.step('send', () => `sent to ${input.to}`),
);
const tick = defineFlow({ name: 'tick' }, async (ctx) => ctx.step('tock', () => 'tocked'));

describe.each(targets)('loom queues, schedules and export on $name', (target) => {
  const env = { LOOM_DB: target.db };
  const json = async <T>(args: string[]): Promise<T> => {
    const out = await loomInProcess([...args, '--json'], env);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    return JSON.parse(out.stdout) as T;
  };
  let firedRun = '';

  beforeAll(async () => {
    const backend = await target.open();
    const flows = createRuntime({ backend, flows: [mail, tick], timerPollMs: 50 });
    try {
      for (const to of ['ana', 'bob', 'cy']) await flows.enqueue('emails', mail, { to });
      await flows.enqueue('reports', mail, { to: 'ops' });
      // Every second: it fires within the deadline, then sleeps until the next second.
      await flows.schedule(tick, '* * * * * *', { name: 'every-second' });
      firedRun = await eventually(async () => {
        const runs = await backend.events.findExecutions({ flow: 'tick', status: 'completed' });
        return runs[0]?.executionId;
      }, 'a fired occurrence');
    } finally {
      await flows.shutdown();
    }
  });

  it('queues lists every queue with its depth', async () => {
    const queues = await json<QueueStats[]>(['queues']);
    expect(queues).toEqual([
      { queue: 'emails', depth: 3, claimed: 0, completed: 0, failed: 0, cancelled: 0 },
      { queue: 'reports', depth: 1, claimed: 0, completed: 0, failed: 0, cancelled: 0 },
    ]);
    const human = await loomInProcess(['queues'], env);
    expect(human.stdout).toMatch(/emails\s+│\s+3\s+│\s+0/);
  });

  it('schedules shows the firing schedule, its last occurrence and its next', async () => {
    const [schedule, ...others] = await json<ScheduleSummary[]>(['schedules']);
    expect(others).toEqual([]);
    expect(schedule).toMatchObject({
      name: 'every-second',
      expression: '* * * * * *',
      timezone: 'UTC',
      flow: 'tick',
      version: null,
    });
    expect(schedule?.executionId).toMatch(/^cron:every-second/);
    // The newest occurrence it fired has a run; the first fired one is among them.
    expect(schedule?.lastRunId).toBe(`cron:every-second:${schedule?.lastFiredAtMs}`);
    expect(firedRun.startsWith('cron:every-second:')).toBe(true);
    expect(Number(firedRun.split(':')[2])).toBeLessThanOrEqual(schedule?.lastFiredAtMs as number);
    expect(schedule?.nextFireAtMs).toBeGreaterThan(schedule?.lastFiredAtMs as number);
    const shown = await loomInProcess(['show', schedule?.lastRunId as string, '--json'], env);
    expect(shown.code).toBe(0);
  });

  it('export writes the whole log as JSON lines, equal to the stored events', async () => {
    const out = await loomInProcess(['export', firedRun], env);
    expect(out.code).toBe(0);
    const lines = out.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as StoredEvent);
    const stored = await json<StoredEvent[]>(['events', firedRun]);
    expect(lines).toEqual(stored);
    expect(lines.map((e) => e.type)).toEqual([
      'execution.started',
      'step.started',
      'step.completed',
      'execution.completed',
    ]);
    expect(out.stderr).toBe(`exported 4 events of ${firedRun}\n`);
    const missing = await loomInProcess(['export', 'no-such-run'], env);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('RUN_NOT_FOUND');
  });
});
