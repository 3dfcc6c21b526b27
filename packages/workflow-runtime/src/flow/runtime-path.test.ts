import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Backend, ErrorCode as KernelErrorCode, openMemory } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../postgres.js';
import { openSqlite } from '../sqlite.js';
import { codeOf } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { createRuntime } from './flow-runtime.js';
import type { StandardSchemaV1 } from './standard-schema.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-runtime-path-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
let counter = 0;

/** Opens one backend twice over the same data where the backend allows (memory: shared). */
const backends: Array<[string, (clock: ManualClock) => Promise<() => Promise<Backend>>]> = [
  [
    'memory',
    async (clock) => {
      const backend = openMemory({ clock });
      return async () => backend;
    },
  ],
  [
    'sqlite',
    async (clock) => {
      const path = join(directory, `path-${++counter}.db`);
      return async () => openSqlite({ path, migrate: true, clock });
    },
  ],
  [
    'postgres',
    async (clock) => {
      const schema = `loom_runtime_path_${process.pid}_${++counter}`;
      afterAll(async () => {
        const admin = await openPostgres({ connectionString: pgUrl, schema });
        await admin.events.connectionPool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await admin.close();
      });
      return async () => openPostgres({ connectionString: pgUrl, schema, migrate: true, clock });
    },
  ],
];

for (const [name, prepare] of backends) {
  describe(`a flow author's whole path through createRuntime (${name})`, () => {
    it('start, signal, sleep, schedule, enqueue and work, recover after a restart, shutdown', async () => {
      const clock = new ManualClock();
      const open = await prepare(clock);
      const approvals: string[] = [];
      const order = defineFlow(
        { name: 'order', signals: { approve: passThrough<{ by: string }>() } },
        async (ctx, input: { sku: string }) => {
          const approval = await ctx.waitForSignal<{ by: string }>('approve');
          const by = approval.received ? approval.payload.by : 'nobody';
          approvals.push(by);
          await ctx.sleep('1h');
          return ctx.step('ship', () => `shipped ${input.sku} (approved by ${by})`);
        },
      );
      const sent: string[] = [];
      const email = defineFlow({ name: 'email' }, async (ctx, input: { to: string }) =>
        ctx.step('send', () => {
          sent.push(input.to);
          return 'sent';
        }),
      );
      const reported: number[] = [];
      const report = defineFlow({ name: 'report' }, async (ctx) =>
        ctx.step('report', () => {
          reported.push(ctx.now());
          return null;
        }),
      );
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const slow = defineFlow({ name: 'slow' }, async (ctx) => {
        await ctx.step('wait', () => held.then(() => 1));
        return ctx.step('after', () => 'recovered');
      });
      const flows = [order, email, report, slow];
      const settings = { clock, timerPollMs: 0, inlineWaitMs: 0, recoverQuietMs: 0 };

      const first = createRuntime({
        backend: await open(),
        flows,
        ...settings,
        closeBackend: name !== 'memory',
      });
      const handle = await first.start(order, { sku: 'loom-1' }, { executionId: 'order-42' });
      await eventually(async () => first.activeExecutions.length === 0, 'the order to suspend');
      expect(await first.status('order-42')).toBe('running');
      expect(await first.signal(order, 'order-42', 'approve', { by: 'ada' })).toMatchObject({
        duplicate: false,
      });
      expect(await first.wakeDue()).toEqual(['order-42']);
      await eventually(async () => first.activeExecutions.length === 0, 'the order to sleep');
      expect(approvals).toEqual(['ada']);
      await clock.advance(60 * 60_000);
      expect(await first.wakeDue()).toEqual(['order-42']);
      expect(await clock.runUntilSettled(handle.result())).toBe('shipped loom-1 (approved by ada)');

      const scheduleId = await first.schedule(report, '0 * * * *', { name: 'hourly' });
      expect(await first.describeSchedule('hourly')).toMatchObject({
        executionId: scheduleId,
        active: true,
      });
      await clock.advance(60 * 60_000);
      await first.wakeDue();
      await eventually(async () => reported.length === 1, 'the hourly report');
      expect(await first.unschedule('hourly')).toBe(true);

      expect((await first.enqueue('emails', email, { to: 'ada@example.com' })).duplicate).toBe(
        false,
      );
      first.work('emails', { pollMs: 100 });
      await eventually(async () => {
        await clock.advance(100);
        return (await first.queueStats('emails')).completed === 1;
      }, 'the queued email');
      expect(sent).toEqual(['ada@example.com']);

      const slowHandle = await first.start(slow, null, { executionId: 'slow-1' });
      const stopping = first.shutdown();
      release();
      await stopping;
      slowHandle.result().catch(() => undefined);

      // A restarted process: a new runtime on the same data picks the execution up.
      const backend = await open();
      const second = createRuntime({ backend, flows, ...settings });
      expect(await second.status('slow-1')).toBe('running');
      expect(await second.recover()).toEqual(['slow-1']);
      expect(await clock.runUntilSettled(second.attach<string>('slow-1').result())).toBe(
        'recovered',
      );
      expect((await second.findExecutions({ flow: order })).executions.map((e) => e.id)).toEqual([
        'order-42',
      ]);
      await second.shutdown();
      expect(await codeOf(backend.events.read('slow-1'))).toBe(KernelErrorCode.STORE_CLOSED);
      await second.shutdown();
    });
  });
}

/** A Standard Schema that accepts any value as `T` (the test is about the runtime, not schemas). */
function passThrough<T>(): StandardSchemaV1<T> {
  return {
    '~standard': { version: 1, vendor: 'test', validate: (value) => ({ value: value as T }) },
  };
}

/** Polls `check` every 5 ms (real time: it waits for I/O, not for the clock); fails after 1,000 tries. */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let attempt = 0; attempt < 1_000; attempt++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('createRuntime', () => {
  it('without a backend or a store is INVALID_ARGUMENT naming what to pass', () => {
    let refused: unknown;
    try {
      createRuntime({} as never);
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({ code: 'INVALID_ARGUMENT', fields: { path: 'backend' } });
    expect((refused as Error).message).toContain('openSqlite');
  });

  it('runtime.events is the kernel emitter: a start on a leased backend emits lease:acquired', async () => {
    const backend = openMemory();
    const runtime = createRuntime({ backend, leaseMode: 'eager', timerPollMs: 0 });
    const acquired: string[] = [];
    runtime.events.on('lease:acquired', (event) => acquired.push(event.executionId));
    const hello = defineFlow({ name: 'hello' }, async (ctx) => ctx.step('hi', () => 'hi'));
    const handle = await runtime.start(hello, null, { executionId: 'hello-1' });
    expect(await handle.result()).toBe('hi');
    expect(acquired).toEqual(['hello-1']);
    await runtime.shutdown();
  });
});
