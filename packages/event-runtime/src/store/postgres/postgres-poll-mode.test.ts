import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import type { StoredEvent } from '../../envelope.js';
import { ErrorCode, type LoomError } from '../../errors.js';
import { freshId } from '../../testing/event-store-conformance.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { until } from '../../testing/until.js';
import { migrate } from './migrate.js';
import { openPostgres, type PostgresBackend } from './open-postgres.js';
import { PostgresEventStore } from './postgres-event-store.js';
import { PostgresLiveStore } from './postgres-live-store.js';
import { tipPollIdsMax } from './tip-poller.js';

const db = useThrowawaySchemas();

async function codeOf(promise: Promise<unknown>): Promise<{ code: string; path?: string }> {
  try {
    await promise;
  } catch (error) {
    const loom = error as LoomError;
    return { code: loom.code ?? `untyped: ${String(error)}`, path: loom.fields?.path as string };
  }
  return { code: 'resolved' };
}

/** Statements that would need LISTEN/NOTIFY on the server: none may be sent in poll mode. */
const notificationStatement = /\b(UN)?LISTEN\b|\bNOTIFY\b|pg_notify/i;

/**
 * Every statement text any pg client of this test process sends (pool queries included: the
 * pool calls `Client.prototype.query`), recorded on the way to the real server.
 */
function recordStatements(): { texts: string[]; stop: () => void } {
  const texts: string[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0];
    const text =
      typeof first === 'string' ? first : ((first as { text?: string } | undefined)?.text ?? '');
    texts.push(text);
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  return {
    texts,
    stop: () => {
      pg.Client.prototype.query = original;
    },
  };
}

/**
 * Two processes' worth of a backend (two pools) on one schema: the follower subscribes to the
 * log (globally and to one execution) and watches the execution's live text; the writer appends,
 * writes live text, sends a signal, claims it due and runs a queue item. Resolves once the
 * follower has seen the writer's events and text, which only a wake-up from the other pool can
 * bring it (its own pool wrote nothing).
 */
async function followAcrossPools(
  schema: string,
  mode: { notifications?: 'listen' | 'poll'; pollIntervalMs?: number },
  applicationName: string,
): Promise<{ pids: () => Promise<{ query: string }[]> }> {
  const connectionString = `${pgTestUrl}?application_name=${applicationName}`;
  const writer = await openPostgres({ connectionString, schema, ...mode });
  const follower = await openPostgres({ connectionString, schema, ...mode });
  const opened: PostgresBackend[] = [writer, follower];
  const executionId = freshId('poll-follow');
  const global: StoredEvent[] = [];
  const own: StoredEvent[] = [];
  let liveWakes = 0;
  const subscriptions = [
    follower.events.subscribe({}, (batch) => {
      global.push(...batch.filter((event) => event.executionId === executionId));
    }),
    follower.events.subscribe({ executionId }, (batch) => {
      own.push(...batch);
    }),
  ];
  const unwatch = follower.live.watch(executionId, () => {
    liveWakes++;
  });
  try {
    await until(() => liveWakes >= 1, 'the live watch to be in effect', 10_000);
    await writer.events.append([
      { executionId, sequence: 0, type: 'execution.started', payload: {} },
      { executionId, sequence: 1, type: 'execution.suspended', payload: {} },
    ]);
    await writer.live.write({
      executionId,
      stream: 'decide:1',
      attempt: 'a',
      offset: 0,
      text: 'Hi',
    });
    await writer.events.sendSignal({ executionId, name: 'go', payload: 1 });
    await writer.events.claimDue(Date.now() + 60_000, 10);
    await writer.queues.enqueue({ queue: 'q', flow: 'f', input: 1 });
    const [item] = await writer.queues.claim('q', { owner: 'w', limit: 1, claimTtlMs: 30_000 });
    if (item !== undefined) await writer.queues.complete('q', [item.itemId]);
    await until(
      () => global.length === 2 && own.length === 2,
      "the follower's subscriptions to deliver the writer's 2 events",
      20_000,
    );
    await until(
      async () => (await follower.live.read(executionId, 'decide:1')).length === 1,
      "the writer's live chunk to be readable by the follower",
      10_000,
    );
    await until(() => liveWakes >= 2, "a live wake after the writer's chunk", 20_000);
    const admin = db.admin;
    return {
      pids: async () =>
        (
          await admin.query<{ query: string }>(
            'SELECT query FROM pg_stat_activity WHERE application_name = $1',
            [applicationName],
          )
        ).rows,
    };
  } finally {
    unwatch();
    await Promise.all(subscriptions.map((subscription) => subscription.close()));
    // The server's view of the sessions is read by the caller before the pools end.
    afterEachClose.push(async () => {
      for (const backend of opened) await backend.close();
    });
  }
}

let afterEachClose: (() => Promise<void>)[] = [];
afterEach(async () => {
  const closes = afterEachClose;
  afterEachClose = [];
  for (const close of closes) await close();
});

describe("PostgresEventStore and PostgresLiveStore, notifications: 'poll'", () => {
  let recorder: ReturnType<typeof recordStatements> | undefined;
  beforeEach(() => {
    recorder = recordStatements();
  });
  afterEach(() => {
    recorder?.stop();
    recorder = undefined;
  });

  it('sends no LISTEN, UNLISTEN or NOTIFY, holds no listening session, and still wakes other processes', async () => {
    const schema = db.freshSchema();
    await migrate({ pool: db.admin, schema });
    const name = `loom_poll_${randomBytes(4).toString('hex')}`;
    const { pids } = await followAcrossPools(
      schema,
      { notifications: 'poll', pollIntervalMs: 20 },
      name,
    );
    const sessions = await pids();
    const texts = recorder?.texts ?? [];
    // The recorder saw the traffic: the tip polls are among it.
    expect(texts.some((text) => text.includes('live_chunks c WHERE c.execution_id = w.id'))).toBe(
      true,
    );
    expect(texts.some((text) => text.includes('max(e.sequence)'))).toBe(true);
    expect(texts.filter((text) => notificationStatement.test(text))).toEqual([]);
    // The server's side: the backends' sessions, none left on a LISTEN.
    expect(sessions.length).toBeGreaterThan(0);
    expect(sessions.filter((session) => notificationStatement.test(session.query))).toEqual([]);
  });
});

// Named without the mode's name, so that `-t "notifications: 'poll'"` (the statement capture of
// the poll mode, docs/scaling.md) leaves this one out.
describe('listen mode, the control', () => {
  let recorder: ReturnType<typeof recordStatements> | undefined;
  beforeEach(() => {
    recorder = recordStatements();
  });
  afterEach(() => {
    recorder?.stop();
    recorder = undefined;
  });

  it('the same scenario in listen mode does LISTEN and NOTIFY (what the check above would catch)', async () => {
    const schema = db.freshSchema();
    await migrate({ pool: db.admin, schema });
    const name = `loom_listen_${randomBytes(4).toString('hex')}`;
    const { pids } = await followAcrossPools(schema, {}, name);
    const sessions = await pids();
    const texts = recorder?.texts ?? [];
    expect(texts.some((text) => /^LISTEN /.test(text))).toBe(true);
    expect(texts.some((text) => text.includes('pg_notify'))).toBe(true);
    expect(sessions.some((session) => /LISTEN /.test(session.query))).toBe(true);
  });
});

describe("notifications: 'poll': the interval is bounded", () => {
  const bad: [string, Record<string, unknown>, string][] = [
    ['an unknown mode', { notifications: 'sometimes' }, 'notifications'],
    ['0 (never) in poll mode', { notifications: 'poll', pollIntervalMs: 0 }, 'pollIntervalMs'],
    ['9 ms', { notifications: 'poll', pollIntervalMs: 9 }, 'pollIntervalMs'],
    ['60,001 ms', { notifications: 'poll', pollIntervalMs: 60_001 }, 'pollIntervalMs'],
    ['a fraction', { notifications: 'poll', pollIntervalMs: 12.5 }, 'pollIntervalMs'],
    ['a string', { notifications: 'poll', pollIntervalMs: '100' }, 'pollIntervalMs'],
  ];
  for (const [what, options, path] of bad) {
    it(`refuses ${what} with INVALID_ARGUMENT naming ${path}, from every opener`, async () => {
      const schema = db.freshSchema();
      const openers = [
        () => PostgresEventStore.open({ connectionString: pgTestUrl, schema, ...options }),
        () => PostgresLiveStore.open({ connectionString: pgTestUrl, schema, ...options }),
        () => openPostgres({ connectionString: pgTestUrl, schema, migrate: true, ...options }),
      ];
      for (const open of openers) {
        expect(await codeOf(open())).toEqual({ code: ErrorCode.INVALID_ARGUMENT, path });
      }
      // openPostgres refused before migrating anything.
      const exists = await db.admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [
        schema,
      ]);
      expect(exists.rowCount).toBe(0);
    });
  }

  it('accepts the bounds themselves, and 0 in listen mode (no safety poll)', async () => {
    const schema = db.freshSchema();
    for (const options of [
      { notifications: 'poll', pollIntervalMs: 10 },
      { notifications: 'poll', pollIntervalMs: 60_000 },
      { notifications: 'listen', pollIntervalMs: 0 },
    ] as const) {
      const store = await PostgresEventStore.open({
        connectionString: pgTestUrl,
        schema,
        ...options,
      });
      await store.close();
    }
  });
});

describe("notifications: 'poll': one tip statement per tick", () => {
  it(`reads the tips of ${tipPollIdsMax + 1} watched executions in 2 statements a tick, and sends none while nothing is watched`, async () => {
    const schema = db.freshSchema();
    await migrate({ pool: db.admin, schema });
    const clock = new ManualClock();
    const intervalMs = 100;
    const store = await PostgresEventStore.open({
      connectionString: pgTestUrl,
      schema,
      clock,
      notifications: 'poll',
      pollIntervalMs: intervalMs,
    });
    try {
      // Nothing watched: no timer is armed, so ten intervals send nothing.
      await clock.advance(10 * intervalMs);
      expect(store.stats.pollStatements).toBe(0);
      const ids = Array.from({ length: tipPollIdsMax + 1 }, (_, n) => freshId(`tip-${n}`));
      const delivered = new Set<string>();
      const subscriptions = ids.map((executionId) =>
        store.subscribe({ executionId }, (batch) => {
          for (const event of batch) delivered.add(event.executionId);
        }),
      );
      // Another process appends to the last one (its subscription's first read may or may not
      // see it; the tick's tip read then does). One tick: one poll of two statements.
      const peer = await PostgresEventStore.open({
        connectionString: pgTestUrl,
        schema,
        notifications: 'poll',
      });
      const last = ids[ids.length - 1] as string;
      await peer.append([
        { executionId: last, sequence: 0, type: 'execution.started', payload: {} },
      ]);
      await peer.close();
      await clock.advance(intervalMs);
      await until(
        () => store.stats.pollStatements === 2 && delivered.has(last),
        "one tick's two tip statements and the peer's append delivered",
        20_000,
      );
      expect(store.stats.pollStatements).toBe(2);
      // Not counted as the caller's round trips (they are off its path, like notify statements).
      await Promise.all(subscriptions.map((subscription) => subscription.close()));
      await clock.advance(10 * intervalMs);
      expect(store.stats.pollStatements).toBe(2);
    } finally {
      await store.close();
    }
  });
});
