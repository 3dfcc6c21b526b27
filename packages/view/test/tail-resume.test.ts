// `loom tail` without an id (every run's new events, until interrupted), `loom resume` (a
// suspended run woken now; a run whose driver hangs taken over by another runtime) and colour in
// the runs table. Against a SQLite file and Postgres: `tail` is the built binary as a child
// process (it ends on SIGTERM); `resume`, `show` and `events` run the CLI in process.
import { fileURLToPath } from 'node:url';
import type { StoredEvent } from '@loom/event-runtime';
import { killTestProcesses, spawnTestProcess } from '@loom/event-runtime/testing';
import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { type RunDetail, runCli } from '../src/index.js';
import { dbTargets } from './db-targets.js';
import { eventually, loomInProcess } from './fixture.js';

/** Resolves with `work`, or fails naming `what` after 20 s (a resume that strands a run hangs). */
async function within<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after 20 s waiting for ${what}`)), 20_000);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const { targets, cleanup } = dbTargets('view-tail-resume');
const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
afterAll(async () => {
  await killTestProcesses();
  await cleanup();
});

const hello = defineFlow({ name: 'hello' }, async (ctx, input: { who: string }) =>
  ctx.step('greet', () => `hello ${input.who}`),
);
const napper = defineFlow({ name: 'napper' }, async (ctx) => {
  await ctx.sleep(3_600_000);
  return 'rested';
});

describe.each(targets)(
  'loom tail (every run) and loom resume on $name',
  { timeout: 60_000 },
  (target) => {
    const env = { LOOM_DB: target.db };
    const open = () => target.open();

    it('tail without an id follows new events of every run from the end, and ends on SIGTERM', async () => {
      const before = createRuntime({ backend: await open(), flows: [hello] });
      try {
        await (await before.start(hello, { who: 'old' }, { executionId: 'old-1' })).result();
      } finally {
        await before.shutdown();
      }
      const tail = spawnTestProcess(bin, {
        args: ['tail', '--json'],
        nodeArgs: [],
        inheritEnv: false,
        env: { PATH: process.env.PATH ?? '', ...env },
        name: 'loom tail',
      });
      try {
        await eventually(
          async () =>
            tail.stderr().includes('following every run after log position') ? true : undefined,
          'tail to start following',
        );
        const runtime = createRuntime({ backend: await open(), flows: [hello] });
        try {
          await (await runtime.start(hello, { who: 'new' }, { executionId: 'new-1' })).result();
        } finally {
          await runtime.shutdown();
        }
        const lines = await eventually(async () => {
          const parsed = tail
            .stdout()
            .trim()
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as StoredEvent);
          return parsed.some((e) => e.type === 'execution.completed') ? parsed : undefined;
        }, 'the new run in the tail');
        expect(lines.map((e) => e.executionId)).toEqual(lines.map(() => 'new-1'));
        expect(lines.map((e) => e.type)).toEqual([
          'execution.started',
          'step.started',
          'step.completed',
          'execution.completed',
        ]);
        tail.child.kill('SIGTERM');
        expect((await tail.ended()).code).toBe(0);
      } finally {
        await tail.kill();
      }
    });

    it('resume wakes a suspended run now: a runtime running its flow replays it at its next poll', async () => {
      const starter = createRuntime({ backend: await open(), flows: [napper] });
      try {
        await starter.start(napper, null, { executionId: 'nap-1' });
        await eventually(async () => {
          const out = await loomInProcess(['show', 'nap-1', '--json'], env);
          return JSON.parse(out.stdout).run.status === 'suspended' ? true : undefined;
        }, 'nap-1 suspended');
      } finally {
        await starter.shutdown();
      }
      const resumed = await loomInProcess(['resume', 'nap-1', '--by', 'ana', '--json'], env);
      expect(resumed.stderr).toBe('');
      expect(JSON.parse(resumed.stdout)).toMatchObject({ executionId: 'nap-1', was: 'suspended' });
      const marked = JSON.parse(
        (await loomInProcess(['events', 'nap-1', '--json'], env)).stdout,
      ) as StoredEvent[];
      const mark = marked.length - 1;
      expect(marked[mark]).toMatchObject({
        type: 'execution.suspended',
        payload: { resumedBy: 'ana' },
      });
      const poller = createRuntime({ backend: await open(), flows: [napper], timerPollMs: 50 });
      try {
        // Replayed by the poller: the nap is not due, so it suspends again with the nap's wake time.
        const again = await eventually(async () => {
          const events = JSON.parse(
            (await loomInProcess(['events', 'nap-1', '--json'], env)).stdout,
          ) as StoredEvent[];
          return events.length > mark + 1 ? events : undefined;
        }, 'nap-1 replayed');
        const last = again[again.length - 1] as StoredEvent;
        expect(last.type).toBe('execution.suspended');
        expect((last.payload as { wakeAtMs: number }).wakeAtMs).toBeGreaterThan(
          Date.now() + 3_000_000,
        );
      } finally {
        await poller.shutdown();
      }
    });

    it('resume of a run whose driver hangs: the owner is fenced out, another runtime finishes it', async () => {
      let release: () => void = () => {};
      const hanging = new Promise<void>((resolve) => {
        release = resolve;
      });
      let calls = 0;
      const stuck = defineFlow({ name: 'stuck' }, async (ctx) =>
        ctx.step('call', async () => {
          calls += 1;
          if (calls === 1) await hanging;
          return `done on call ${calls}`;
        }),
      );
      const owner = createRuntime({ backend: await open(), flows: [stuck] });
      const rescuer = createRuntime({ backend: await open(), flows: [stuck], timerPollMs: 50 });
      try {
        const handle = await owner.start(stuck, null, { executionId: 'stuck-1' });
        await eventually(async () => (calls === 1 ? true : undefined), 'the first call to start');
        const resumed = await loomInProcess(['resume', 'stuck-1', '--json'], env);
        expect(JSON.parse(resumed.stdout)).toMatchObject({ was: 'running' });
        expect(
          await within(rescuer.attach('stuck-1').result(), 'stuck-1 to finish after the resume'),
        ).toBe('done on call 2');
        release();
        // The owner's late result cannot be appended under its old fence: the log keeps one ending.
        await handle.result().catch(() => undefined);
        const events = JSON.parse(
          (await loomInProcess(['events', 'stuck-1', '--json'], env)).stdout,
        ) as StoredEvent[];
        expect(events.filter((e) => e.type === 'execution.completed')).toHaveLength(1);
        expect(events.at(-1)?.payload).toMatchObject({ output: 'done on call 2' });
        // The rescuer found the owner's call in flight: the timeline counts the interruption.
        const shown = await loomInProcess(['show', 'stuck-1', '--json'], env);
        const [call] = (JSON.parse(shown.stdout) as RunDetail).timeline;
        expect(call).toMatchObject({ name: 'call', status: 'completed', interruptions: 1 });
        expect((await loomInProcess(['show', 'stuck-1'], env)).stdout).toContain('interrupted 1x');
      } finally {
        release();
        await owner.shutdown();
        await rescuer.shutdown();
      }
    });

    it('resume of a run whose driver hangs, claimed by the owner’s own timer poll: the owner drives it again', async () => {
      let release: () => void = () => {};
      const hanging = new Promise<void>((resolve) => {
        release = resolve;
      });
      let calls = 0;
      const stuck = defineFlow({ name: 'stuck-own' }, async (ctx) =>
        ctx.step('call', async () => {
          calls += 1;
          if (calls === 1) await hanging;
          return `done on call ${calls}`;
        }),
      );
      // Only the owner polls, so its poll is the one that claims the wake-up the resume made due.
      const owner = createRuntime({ backend: await open(), flows: [stuck], timerPollMs: 20 });
      try {
        const handle = await owner.start(stuck, null, { executionId: 'stuck-own-1' });
        await eventually(async () => (calls === 1 ? true : undefined), 'the first call to start');
        const resumed = await loomInProcess(['resume', 'stuck-own-1', '--json'], env);
        expect(JSON.parse(resumed.stdout)).toMatchObject({ was: 'running' });
        expect(
          await within(
            owner.attach('stuck-own-1').result(),
            'stuck-own-1 to finish on a new driver of the owner (its first call still hangs)',
          ),
        ).toBe('done on call 2');
        expect(calls).toBe(2);
        release();
        await handle.result().catch(() => undefined);
        const events = JSON.parse(
          (await loomInProcess(['events', 'stuck-own-1', '--json'], env)).stdout,
        ) as StoredEvent[];
        expect(events.filter((e) => e.type === 'execution.completed')).toHaveLength(1);
      } finally {
        release();
        await owner.shutdown();
      }
    });

    it('resume of a run whose driver hangs holding its lease: another runtime takes it at its next poll', async () => {
      let release: () => void = () => {};
      const hanging = new Promise<void>((resolve) => {
        release = resolve;
      });
      let calls = 0;
      const stuck = defineFlow({ name: 'stuck-leased' }, async (ctx) =>
        ctx.step('call', async () => {
          calls += 1;
          if (calls === 1) await hanging;
          return `done on call ${calls}`;
        }),
      );
      // The owner leases at once and keeps renewing while its call hangs; it never polls.
      const owner = createRuntime({
        backend: await open(),
        flows: [stuck],
        leaseMode: 'eager',
        timerPollMs: 0,
        renewEveryMs: 100,
      });
      const rescuer = createRuntime({ backend: await open(), flows: [stuck], timerPollMs: 50 });
      try {
        const handle = await owner.start(stuck, null, { executionId: 'stuck-leased-1' });
        await eventually(async () => (calls === 1 ? true : undefined), 'the first call to start');
        const resumed = await loomInProcess(['resume', 'stuck-leased-1', '--json'], env);
        expect(JSON.parse(resumed.stdout)).toMatchObject({ was: 'running' });
        expect(
          await within(
            rescuer.attach('stuck-leased-1').result(),
            'stuck-leased-1 to finish on the rescuer (the owner holds a lease for its hung call)',
          ),
        ).toBe('done on call 2');
        release();
        await handle.result().catch(() => undefined);
      } finally {
        release();
        await owner.shutdown();
        await rescuer.shutdown();
      }
    });

    it('resume of an ended run is refused with what to do instead', async () => {
      const out = await loomInProcess(['resume', 'old-1'], env);
      expect(out.code).toBe(4);
      expect(out.stderr).toContain('EXECUTION_SETTLED');
      expect(out.stderr).toContain('loom fork');
    });

    it('the runs table colours statuses only when asked (a terminal, NO_COLOR unset)', async () => {
      const run = async (color: boolean) => {
        let out = '';
        const code = await runCli(['runs', '--db', target.db], {
          stdout: (text) => {
            out += text;
          },
          stderr: () => {},
          env: {},
          isTty: false,
          color,
        });
        expect(code).toBe(0);
        return out;
      };
      expect(await run(true)).toContain('\u001b[32mcompleted\u001b[39m');
      expect(await run(false)).not.toContain('\u001b[');
    });
  },
);
