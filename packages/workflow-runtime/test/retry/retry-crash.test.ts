import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventStore, LoomError, StoredEvent } from '@loom/event-runtime';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { killTestProcesses, spawnTestProcess } from '@loom/event-runtime/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/index.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-retry-crash-'));
const worker = join(import.meta.dirname, 'retry-worker.ts');
const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

/** The policy's attempts in retry-worker.ts. */
const retryAttempts = 4;
let counter = 0;

function startWorker(target: string, attemptsFile: string, mode: string, wait: string) {
  const child = spawnTestProcess(worker, {
    args: [target, attemptsFile, mode, wait],
    name: 'retry worker',
  });
  return { child: child.child, ready: child.line(/ready/), exited: child.exit };
}

/** Polls `check` every 10 ms until it holds; fails after `deadlineMs`. */
async function until(check: () => Promise<boolean>, what: string, deadlineMs = 30_000) {
  for (let waitedMs = 0; waitedMs < deadlineMs; waitedMs += 10) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
}

const count = (events: StoredEvent[], type: string) =>
  events.filter((event) => event.type === type).length;

interface Backend {
  target: string;
  open(): Promise<EventStore>;
  drop(): Promise<void>;
}

const backends: Array<[string, () => Promise<Backend>]> = [
  [
    'sqlite',
    async () => {
      const path = join(directory, `retry-${++counter}.db`);
      SqliteEventStore.open({ path, migrate: true }).close();
      return {
        target: `sqlite:${path}`,
        open: async () => SqliteEventStore.open({ path, busyTimeoutMs: 10_000 }),
        drop: async () => {},
      };
    },
  ],
  [
    'postgres',
    async () => {
      const schema = `loom_retry_crash_${process.pid}_${++counter}`;
      const setup = await PostgresEventStore.open({ connectionString: pgUrl, schema });
      await setup.migrate();
      await setup.close();
      return {
        target: `postgres:${schema}`,
        open: () => PostgresEventStore.open({ connectionString: pgUrl, schema }),
        drop: async () => {
          const dropper = await PostgresEventStore.open({ connectionString: pgUrl, schema });
          await dropper.connectionPool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          await dropper.close();
        },
      };
    },
  ],
];

for (const [name, make] of backends) {
  describe(`a process SIGKILLed mid-retry on ${name}`, () => {
    for (const wait of ['suspend', 'inline'] as const) {
      it(`does not restart the attempt count: attempts across the crash equal the policy's max (backoff ${wait === 'suspend' ? 'suspended' : 'waited in memory'})`, async () => {
        const backend = await make();
        const attemptsFile = join(directory, `attempts-${name}-${wait}.log`);
        writeFileSync(attemptsFile, '');
        const store = await backend.open();
        try {
          const first = startWorker(backend.target, attemptsFile, 'start', wait);
          await first.ready;
          // Kill it inside the backoff after attempt 2: that attempt's failure is durable.
          await until(async () => {
            const events = await store.read('order-1');
            return count(events, 'step.attempt_failed') >= 2;
          }, 'two failed attempts in the log');
          first.child.kill('SIGKILL');
          await first.exited;
          const before = await store.read('order-1');
          expect(before.some((event) => event.type === 'execution.failed')).toBe(false);

          const second = startWorker(backend.target, attemptsFile, 'recover', wait);
          await second.ready;
          await until(async () => {
            const events = await store.read('order-1');
            return events.at(-1)?.type === 'execution.failed';
          }, 'the execution to fail');
          second.child.kill('SIGKILL');
          await second.exited;

          const attempts = readFileSync(attemptsFile, 'utf8').split('\n').filter(Boolean);
          expect(attempts).toEqual(['1', '2', '3', '4']);
          const events = await store.read('order-1');
          expect(count(events, 'step.started')).toBe(1);
          expect(count(events, 'step.attempt_failed')).toBe(retryAttempts - 1);
          expect(count(events, 'step.failed')).toBe(1);
          const reader = createRuntime({ store, timerPollMs: 0 });
          const error = (await reader
            .attach('order-1')
            .result()
            .catch((caught: unknown) => caught)) as LoomError;
          await reader.shutdown();
          expect(error.code).toBe('EXECUTION_FAILED');
          expect(error.fields).toMatchObject({
            step: 'charge',
            attempts: retryAttempts,
            error: { message: `card gateway down (attempt ${retryAttempts})` },
          });
        } finally {
          await store.close();
          await backend.drop();
        }
      }, 60_000);
    }
  });
}
