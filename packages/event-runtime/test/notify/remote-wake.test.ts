// ADR 0028: appends are announced after their commit, by the writer's notifier, folded across
// appends. These tests prove, by counting, that another process's waiters are woken by those
// announcements alone (their poll is off), and what the announcements look like on the wire.
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { EventEnvelope, StoredEvent } from '../../src/envelope.js';
import { ErrorCode, type LoomError } from '../../src/errors.js';
import type { Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { PostgresEventStore } from '../../src/postgres.js';
import { bucketOf, channelName } from '../../src/store/postgres/notify-bucket.js';
import {
  killTestProcesses,
  listenerProcessId,
  listeningChannels,
  spawnTestProcess,
} from '../../src/testing.js';
import { pgTestUrl, useThrowawaySchemas } from '../support/throwaway-schemas.js';

const db = useThrowawaySchemas();
afterEach(killTestProcesses);
const writer = fileURLToPath(new URL('./notify-writer.ts', import.meta.url));
const remoteNode = fileURLToPath(new URL('./remote-result-node.ts', import.meta.url));

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function waitFor(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

interface WriterStats {
  appends: number;
  notifyStatements: number;
  notifyFailures: number;
}

/** Runs notify-writer.ts in its own process and returns what it printed. */
async function runWriter(schema: string, prefix: string, executions: number, events: number) {
  const writing = spawnTestProcess(writer, {
    args: [pgTestUrl, schema, prefix, `${executions}`, `${events}`],
  });
  return JSON.parse((await writing.succeeded()).stdout) as WriterStats;
}

async function migrated(): Promise<string> {
  const schema = db.freshSchema();
  const store = await PostgresEventStore.open({ connectionString: pgTestUrl, schema });
  await store.migrate();
  await store.close();
  return schema;
}

describe('Postgres notifications after commit (ADR 0028)', () => {
  it('wakes another process’s waiters through NOTIFY alone, with no more notify statements than appends', async () => {
    const schema = await migrated();
    // pollIntervalMs 0: the follower never polls, so only a notification can wake it.
    const follower = await PostgresEventStore.open({
      connectionString: pgTestUrl,
      schema,
      pollIntervalMs: 0,
    });
    const executions = 24;
    const events = 5;
    const seen = new Map<string, number>();
    let globalSeen = 0;
    const subscriptions = Array.from({ length: executions }, (_, index) =>
      follower.subscribe({ executionId: `wake-${index}` }, (batch: StoredEvent[]) => {
        seen.set(`wake-${index}`, (seen.get(`wake-${index}`) ?? 0) + batch.length);
      }),
    );
    subscriptions.push(
      follower.subscribe({}, (batch) => {
        globalSeen += batch.length;
      }),
    );
    try {
      const all = Array.from({ length: 16 }, (_, bucket) => channelName(schema, bucket)).sort();
      await waitFor(() => listenerProcessId(follower) !== undefined, 'the listener');
      expect(await listeningChannels(follower)).toEqual(all);
      const stats = await runWriter(schema, 'wake', executions, events);
      expect(stats.appends).toBe(executions * events);
      expect(stats.notifyFailures).toBe(0);
      // Folded: at least one statement, never more than one per append.
      expect(stats.notifyStatements).toBeGreaterThan(0);
      expect(stats.notifyStatements).toBeLessThanOrEqual(stats.appends);
      await waitFor(
        () =>
          [...seen.values()].reduce((sum, count) => sum + count, 0) === executions * events &&
          globalSeen === executions * events,
        'every waiter to see every event',
      );
      for (let index = 0; index < executions; index++) {
        expect(seen.get(`wake-${index}`)).toBe(events);
      }
      expect(follower.stats.notifications).toBeGreaterThan(0);
      expect(follower.stats.notifications).toBeLessThanOrEqual(stats.appends);
    } finally {
      for (const subscription of subscriptions) await subscription.close();
      await follower.close();
    }
  });

  it('a remote result() is woken by the other node’s announcement, not by a poll', async () => {
    const schema = await migrated();
    const node = spawnTestProcess(remoteNode, { args: [pgTestUrl, schema], stdin: true });
    // pollIntervalMs 0: this node's subscriptions never poll.
    const store = await PostgresEventStore.open({
      connectionString: pgTestUrl,
      schema,
      pollIntervalMs: 0,
    });
    const flow: Flow<null, string> = { name: 'remote-flow', run: async () => 'not run here' };
    const runtime = createKernelRuntime({
      store,
      nodeId: 'waiter',
      flows: [flow as Flow<never, unknown>],
    });
    try {
      await node.waitFor(
        () => node.stdout().includes('started\n') || node.stderr().length > 0,
        'the other node to start',
        15_000,
      );
      expect(node.stderr()).toBe('');
      const result = runtime.attach('remote-1').result();
      // The wait is LISTENing (its bucket) before the other node is told to go.
      const bucket = channelName(schema, bucketOf('remote-1', 16));
      await waitFor(() => listenerProcessId(store) !== undefined, 'the listener');
      expect(await listeningChannels(store)).toContain(bucket);
      const heardBefore = store.stats.notifications;
      node.child.stdin?.end('go\n');
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('result() was not woken within 15 s')), 15_000);
      });
      try {
        expect(await Promise.race([result, deadline])).toBe('finished on the other node');
      } finally {
        clearTimeout(timer);
      }
      expect(store.stats.notifications).toBeGreaterThan(heardBefore);
      expect((await node.ended()).code).toBe(0);
    } finally {
      await node.kill();
      await runtime.shutdown();
      await store.close();
    }
  });

  it('announces JSON arrays of execution ids on each execution’s bucket, never a refused append', async () => {
    const schema = await migrated();
    const store = await PostgresEventStore.open({ connectionString: pgTestUrl, schema });
    const listener = new pg.Client({ connectionString: pgTestUrl });
    await listener.connect();
    const heard: { channel: string; ids: string[] }[] = [];
    listener.on('notification', (message) => {
      heard.push({ channel: message.channel, ids: JSON.parse(message.payload ?? '') });
    });
    const ids = ['a', 'quote"d:\nid', 'exécution-Ω'];
    const refused = 'refused';
    try {
      const channels = Array.from({ length: 16 }, (_, bucket) => channelName(schema, bucket));
      await listener.query(channels.map((channel) => `LISTEN "${channel}"`).join('; '));
      await Promise.all(
        ids.map((id) =>
          store.append([{ executionId: id, sequence: 0, type: 't', payload: {} } as EventEnvelope]),
        ),
      );
      await store.fences.advance(refused);
      const error = await store
        .append([{ executionId: refused, sequence: 0, type: 't', payload: {} }], {
          fenceEpoch: 0,
        })
        .then(
          () => undefined,
          (caught: LoomError) => caught,
        );
      expect(error?.code).toBe(ErrorCode.FENCE_STALE);
      // The witness commits after the refused append; notifications arrive in commit order.
      await store.append([{ executionId: 'witness', sequence: 0, type: 't', payload: {} }]);
      await waitFor(() => heard.some((entry) => entry.ids.includes('witness')), 'the witness');
      const announced = heard.flatMap((entry) => entry.ids);
      expect(announced.filter((id) => id !== 'witness').sort()).toEqual([...ids].sort());
      expect(announced).not.toContain(refused);
      for (const entry of heard) {
        for (const id of entry.ids)
          expect(entry.channel).toBe(channelName(schema, bucketOf(id, 16)));
      }
    } finally {
      await listener.end();
      await store.close();
    }
  });
});
