// `loom retry`: a failed run retried by the CLI (in process, its own store), with no flow
// registered there; a runtime running the flow (the fix deployed) takes it on its next timer
// poll. Against a SQLite file and Postgres.
import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { dbTargets } from './db-targets.js';
import { eventually, loomInProcess } from './fixture.js';

const { targets, cleanup } = dbTargets('view-retry');
afterAll(cleanup);

describe.each(targets)('loom retry on $name', (target) => {
  const env = { LOOM_DB: target.db };

  it('retries a failed run from its failed step: the worker replays the rest, the completed step does not run again', async () => {
    const ran: string[] = [];
    let fixed = false;
    const charge = defineFlow({ name: 'charge' }, async (ctx) => {
      await ctx.step('reserve', () => {
        ran.push('reserve');
        return 'reserved';
      });
      return ctx.step('charge', () => {
        ran.push(fixed ? 'charge' : 'charge failed');
        if (!fixed) throw new Error('card declined');
        return 'charged';
      });
    });
    const worker = createRuntime({
      backend: await target.open(),
      flows: [charge],
      timerPollMs: 50,
    });
    try {
      const run = await worker.start(charge, null, { executionId: 'charge-9' });
      await expect(run.result()).rejects.toMatchObject({ code: 'EXECUTION_FAILED' });
      fixed = true; // the fix deployed

      const retried = await loomInProcess(
        ['retry', 'charge-9', '--by', 'ana', '--reason', 'card gateway fixed', '--json'],
        env,
      );
      expect(retried.stderr).toBe('');
      expect(retried.code).toBe(0);
      expect(JSON.parse(retried.stdout)).toEqual({ executionId: 'charge-9' });
      expect(await worker.attach(run.executionId).result()).toBe('charged');
      expect(ran).toEqual(['reserve', 'charge failed', 'charge']);
      const { stdout } = await loomInProcess(['events', 'charge-9', '--json'], env);
      const types = (JSON.parse(stdout) as { type: string }[]).map((event) => event.type);
      expect(types.filter((type) => type === 'execution.retried')).toHaveLength(1);
      // Who asked and why are in the log, and `loom show` says them.
      const retriedEvent = (JSON.parse(stdout) as { type: string; payload: unknown }[]).find(
        (event) => event.type === 'execution.retried',
      );
      expect(retriedEvent?.payload).toMatchObject({ by: 'ana', reason: 'card gateway fixed' });
      const shown = await loomInProcess(['show', 'charge-9'], env);
      expect(shown.stdout).toMatch(/retried at \S+ by ana: card gateway fixed \(event \d+\)/);
      // The retried step's timeline entry is the retry's outcome, not the failure before it.
      const shownJson = await loomInProcess(['show', 'charge-9', '--json'], env);
      const timeline = (JSON.parse(shownJson.stdout) as { timeline: object[] }).timeline;
      expect(timeline).toMatchObject([
        { name: 'reserve', status: 'completed' },
        { name: 'charge', status: 'completed', result: 'charged', failedAttempts: 0 },
      ]);
      expect(types.at(-1)).toBe('execution.completed');

      // A run that did not fail is a conflict (exit 4); no such run is exit 3.
      const again = await loomInProcess(['retry', 'charge-9'], env);
      expect(again.code).toBe(4);
      expect(again.stderr).toContain('EXECUTION_NOT_FAILED');
      const missing = await loomInProcess(['retry', 'nope-1'], env);
      expect(missing.code).toBe(3);
      expect(
        await eventually(
          async () => (await worker.status('charge-9')) === 'completed' || undefined,
          'charge-9 completed',
        ),
      ).toBe(true);
    } finally {
      await worker.shutdown();
    }
  });
});
