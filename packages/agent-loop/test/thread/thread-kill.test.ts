// A process chatting on a thread is SIGKILLed after its second message is accepted and the
// model's first answer to it (a tool call) is durable, before the reply. A second process,
// sending the same message again (same messageId, as a client that lost the response would),
// gets the same turn; the turn resumes from its log: the recorded model answer is not asked
// again, the tool runs once, the message is answered once, and nothing is lost or duplicated.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EventStore, EventType } from '@loom/event-runtime';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { killTestProcesses } from '@loom/event-runtime/testing';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { callsIn, life } from '../kill/kill-harness.js';

const worker = join(import.meta.dirname, 'thread-worker.ts');
const dir = mkdtempSync(join(tmpdir(), 'loom-thread-kill-'));
const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const schema = `h_agent_thread_kill_${process.pid}_${Date.now().toString(36)}`;

afterAll(async () => {
  await killTestProcesses();
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

const backends: [string, Record<string, string>, () => Promise<EventStore>][] = [
  [
    'a SQLite file',
    { TH_BACKEND: 'sqlite', TH_DB: join(dir, 'thread.db') },
    async () => SqliteEventStore.open({ path: join(dir, 'thread.db'), readOnly: true }),
  ],
  [
    'Postgres',
    { TH_BACKEND: 'postgres', TH_PG_URL: pgUrl, TH_SCHEMA: schema },
    () => PostgresEventStore.open({ connectionString: pgUrl, schema }),
  ],
];

describe.concurrent.each(backends)('a thread across a SIGKILL, on %s', (tag, backendEnv, open) => {
  it('killed mid-turn: the message is answered exactly once, none lost or duplicated', async () => {
    const name = tag.startsWith('Postgres') ? 'pg' : 'sqlite';
    const env = {
      ...backendEnv,
      TH_THREAD: 'chat-k',
      TH_MODEL_CALLS: join(dir, `${name}.model-calls`),
      TH_TOOL_CALLS: join(dir, `${name}.tool-calls`),
    };
    const first = await life({ ...env, TH_KILL: '1' }, worker);
    expect(first.signal, first.output).toBe('SIGKILL');
    expect(callsIn(env.TH_TOOL_CALLS)).toEqual([]);

    const second = await life(env, worker);
    expect(second.code, second.output).toBe(0);
    expect(second.line?.kind).toBe('result');
    const result = second.line?.value as {
      replies: string[];
      turns: string[];
      reason: string;
      messages: { message: number; role: string; text?: string }[];
    };
    expect(result.replies).toEqual(['re: hello (0 earlier)', 're: look loom (1 earlier)']);
    expect(result.turns).toEqual(['chat-k/1', 'chat-k/2']);
    expect(result.messages.map((m) => [m.message, m.role])).toEqual([
      [1, 'user'],
      [1, 'assistant'],
      [2, 'user'],
      [2, 'assistant'],
      [2, 'tool'],
      [2, 'assistant'],
    ]);
    // The model: once for 'hello', and for 'look loom' once before the kill (its answer was
    // recorded, so not asked again) and once after the tool. The tool ran once, in the second life.
    expect(callsIn(env.TH_MODEL_CALLS)).toEqual(['hello', 'look loom', 'look loom']);
    expect(callsIn(env.TH_TOOL_CALLS)).toEqual(['chat-k/2/1.0']);

    const store = await open();
    try {
      const thread = await store.read('chat-k');
      expect(thread.filter((e) => e.type === EventType.childStarted)).toHaveLength(2);
      expect(thread.filter((e) => e.type === EventType.childCompleted)).toHaveLength(2);
      const messages = (await store.readSignals('chat-k')).filter(
        (s) => s.name === 'thread:message',
      );
      expect(messages.map((s) => (s.payload as { messageId?: string }).messageId)).toEqual([
        'm1',
        'm2',
      ]);
      const turn = await store.read('chat-k/2');
      expect(turn.filter((e) => e.type === EventType.executionStarted)).toHaveLength(1);
      expect(turn.at(-1)?.type).toBe(EventType.executionCompleted);
      expect(await store.read('chat-k/3')).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
