// `loom forget <subject>`: the CLI (in process, its own store) erases a subject whose fields a
// real flow process encrypted with @loom/plugin-crypto, in a real SQLite file and Postgres schema.
import { randomBytes } from 'node:crypto';
import type { Backend } from '@loom/event-runtime';
import {
  encryptingEventStore,
  isErased,
  type Keyring,
  localKeyProvider,
} from '@loom/plugin-crypto';
import { PostgresKeyring } from '@loom/plugin-crypto/postgres';
import { SqliteKeyring } from '@loom/plugin-crypto/sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { dbTargets, pgUrl } from './db-targets.js';
import { loomInProcess } from './fixture.js';

const { targets, cleanup } = dbTargets('view-forget');
afterAll(cleanup);
const provider = localKeyProvider({ current: 'm1', keys: { m1: randomBytes(32) } });
const sensitive = { 'user.registered': { subject: 'userId', fields: ['email'] } };

describe.each(targets)('loom forget on $name', (target) => {
  async function openKeyring(): Promise<Keyring> {
    if (target.name === 'sqlite')
      return SqliteKeyring.open({
        path: target.env.SQLITE_PATH as string,
        provider,
        cacheTtlMs: 0,
      });
    return PostgresKeyring.open({
      connectionString: pgUrl,
      schema: target.env.PG_SCHEMA as string,
      provider,
      cacheTtlMs: 0,
    });
  }

  it("destroys the subject's keys: its fields read as Erased, the chain verifies, a receipt is logged", async () => {
    const backend: Backend = await target.open();
    const keyring = await openKeyring();
    try {
      const store = encryptingEventStore(backend.events, { sensitive, keyring });
      for (const [sequence, userId] of ['ada', 'bob'].entries()) {
        await store.append([
          {
            executionId: 'signup-1',
            sequence,
            type: 'user.registered',
            payload: { userId, email: `${userId}@example.com` },
          },
        ]);
      }
      const env = { LOOM_DB: target.db };
      const first = await loomInProcess(['forget', 'ada', '--json'], env);
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(JSON.parse(first.stdout)).toMatchObject({
        subject: 'ada',
        keysDestroyed: 1,
        alreadyForgotten: false,
        receiptExecutionId: 'loom-erasure:ada',
      });
      const [ada, bob] = await store.read('signup-1');
      expect(isErased((ada?.payload as { email?: unknown } | undefined)?.email)).toBe(true);
      expect((bob?.payload as { email?: unknown } | undefined)?.email).toBe('bob@example.com');
      // Neither log starts with execution.started, so the index (and `loom verify`) does not
      // know them: the store checks them.
      expect(await store.verify('signup-1')).toMatchObject({ ok: true, events: 2 });
      expect(await backend.events.read('loom-erasure:ada')).toMatchObject([
        { type: 'crypto.subject_forgotten', payload: { subject: 'ada', keysDestroyed: 1 } },
      ]);
      const again = await loomInProcess(['forget', 'ada'], env);
      expect(again.code).toBe(0);
      expect(again.stdout).toContain('ada was already forgotten');
      const empty = await loomInProcess(['forget', ''], env);
      expect(empty.code).toBe(2);
      expect(empty.stderr).toContain('[INVALID_ARGUMENT]');
    } finally {
      await keyring.close();
      await backend.close();
    }
  });
});
