// Encryption (@loom/plugin-crypto) and externalisation compose in either order (issue 16). With
// encryption outside, a large sensitive field is stored once, as ciphertext, in the content store,
// and forgetting its subject makes it unreadable. With encryption inside, the reference is what
// is encrypted: forgetting the subject makes the field unreadable through the log, but the
// content store keeps the plaintext bytes (docs/payloads.md: wire encryption outside). A
// transactional step through both is sealed inside its transaction; its field moves to the
// content store where the transaction can await (Postgres) and stays in the log, as ciphertext,
// where it cannot (SQLite). Memory, SQLite and Postgres, each with its own keyring and content
// store.
import { type EventStore, InMemoryEventStore, isTransactional } from '@loom/event-runtime';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import {
  encryptingEventStore,
  InMemoryKeyring,
  isErased,
  type Keyring,
  localKeyProvider,
} from '@loom/plugin-crypto';
import { PostgresKeyring } from '@loom/plugin-crypto/postgres';
import { SqliteKeyring } from '@loom/plugin-crypto/sqlite';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ContentKey,
  type ContentStore,
  contentResolvingEventStore,
  externalizingEventStore,
  InMemoryContentStore,
} from '../src/index.js';
import { PostgresContentStore } from '../src/postgres.js';
import { SqliteContentStore } from '../src/sqlite.js';
import { pgTestUrl, useThrowaway } from '../src/throwaway.test-support.js';

// Postgres schemas (one per backend opened, all of this file's) and SQLite files, removed after
// the file.
const spare = useThrowaway();
const provider = localKeyProvider({ current: 'm1', keys: { m1: Buffer.alloc(32, 7) } });

const body = 'confidential clause; '.repeat(2_000); // ~42 KB
const sensitive = { 'doc.uploaded': { subject: 'owner', fields: ['body'] } };
const event = (executionId: string) => ({
  executionId,
  sequence: 0,
  type: 'doc.uploaded',
  payload: { owner: 'ada', title: 'contract', body },
});

/** One backend's event log, content store and keyring, with a look behind their backs. */
interface Backend {
  log: EventStore;
  content: ContentStore;
  keyring: Keyring;
  /** Every content item's bytes, as text, as the content store holds them. */
  items(): Promise<string[]>;
  close(): Promise<void>;
}

const backends: Array<[string, () => Promise<Backend>]> = [
  [
    'memory',
    async () => {
      const content = new InMemoryContentStore();
      const keys: ContentKey[] = [];
      const put = content.put.bind(content);
      content.put = async (bytes) => {
        const ref = await put(bytes);
        keys.push(ref.$content);
        return ref;
      };
      const log = new InMemoryEventStore();
      const keyring = new InMemoryKeyring();
      return {
        log,
        content,
        keyring,
        items: async () => {
          const found = await content.getMany([...new Set(keys)]);
          return [...found.values()].map((bytes) => Buffer.from(bytes).toString('utf8'));
        },
        close: async () => {
          await keyring.close();
          await log.close();
        },
      };
    },
  ],
  [
    'sqlite',
    async () => {
      const logPath = spare.freshPath('-log.db');
      const log = SqliteEventStore.open({ path: logPath, migrate: true });
      const keyring = SqliteKeyring.open({ path: logPath, provider });
      const contentPath = spare.freshPath('-content.db');
      const content = SqliteContentStore.open({ path: contentPath });
      return {
        log,
        content,
        keyring,
        items: async () => {
          const reader = new Database(contentPath, { readonly: true });
          try {
            return (
              reader.prepare('SELECT bytes FROM loom_content').all() as Array<{ bytes: Buffer }>
            ).map((row) => row.bytes.toString('utf8'));
          } finally {
            reader.close();
          }
        },
        close: async () => {
          await content.close();
          await keyring.close();
          await log.close();
        },
      };
    },
  ],
  [
    'postgres',
    async () => {
      // The log, the keys and the content in one schema, as an application would keep them.
      const schema = spare.freshSchema();
      const log = await PostgresEventStore.open({ connectionString: pgTestUrl, schema });
      await log.migrate();
      const keyring = await PostgresKeyring.open({ connectionString: pgTestUrl, schema, provider });
      const content = await PostgresContentStore.open({ connectionString: pgTestUrl, schema });
      return {
        log,
        content,
        keyring,
        items: async () =>
          (
            await spare.admin.query<{ bytes: Buffer }>(`SELECT bytes FROM "${schema}".content`)
          ).rows.map((row) => row.bytes.toString('utf8')),
        close: async () => {
          await content.close();
          await keyring.close();
          await log.close();
        },
      };
    },
  ],
];

for (const [name, open] of backends) {
  describe(`encryption and content on ${name}`, () => {
    const closing: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const close of closing.splice(0)) await close();
    });

    it('encryption outside: the field is stored once, as ciphertext, and erasure makes it unreadable', async () => {
      const { log, content, keyring, items, close } = await open();
      closing.push(close);
      const store = encryptingEventStore(
        contentResolvingEventStore(
          externalizingEventStore(log, content, { thresholdBytes: 1024 }),
          content,
        ),
        { keyring, sensitive },
      );
      await store.append([event('doc-1')]);
      const stored = (await log.read('doc-1'))[0]?.payload as { body: unknown; title: string };
      expect(stored.body).toMatchObject({ $content: expect.stringMatching(/^sha256:/) });
      const held = await items();
      expect(held).toHaveLength(1);
      expect(held[0]).not.toContain('confidential');
      expect(held[0]).toContain('aes-256-gcm');
      expect(((await store.read('doc-1'))[0]?.payload as { body: string } | undefined)?.body).toBe(
        body,
      );

      await store.forget('ada');
      const after = (await store.read('doc-1'))[0]?.payload as { body: unknown; title: string };
      expect(isErased(after.body)).toBe(true);
      expect(after.title).toBe('contract');
      expect((await store.verify('doc-1')).ok).toBe(true);
    });

    if (name !== 'memory') {
      it('a transactional step through both (encryption outside): sealed in its transaction, moved where it can await', async () => {
        const { log, content, keyring, items, close } = await open();
        closing.push(close);
        const store = encryptingEventStore(
          contentResolvingEventStore(
            externalizingEventStore(log, content, { thresholdBytes: 1024 }),
            content,
          ),
          { keyring, sensitive },
        );
        if (!isTransactional(store)) throw new Error(`no transact over ${name}`);
        await store.append([event('doc-3')]);
        // Postgres holds its transaction across an await; better-sqlite3 runs it synchronously.
        const work = name === 'postgres' ? async () => 'saved' : () => 'saved';
        const { result, stored } = await store.transact(work, () => [
          { ...event('doc-3'), sequence: 1, payload: { owner: 'ada', title: 'v2', body } },
        ]);
        expect(result).toBe('saved');
        expect((stored[0]?.payload as { body?: unknown } | undefined)?.body).toBe(body);
        const raw = (await log.read('doc-3'))[1]?.payload as { body: unknown };
        if (name === 'postgres') {
          // Moved inside the transaction, as ciphertext: both events' bodies (two IVs).
          expect(raw.body).toMatchObject({ $content: expect.stringMatching(/^sha256:/) });
          const held = await items();
          expect(held).toHaveLength(2);
          for (const text of held) expect(text).not.toContain('confidential');
        } else {
          // Nothing can be put inside SQLite's transaction: the ciphertext stays in the log.
          expect(raw.body).toMatchObject({ $enc: 'aes-256-gcm' });
          expect(await items()).toHaveLength(1);
        }
        expect(JSON.stringify(await log.read('doc-3'))).not.toContain('confidential');
        await store.forget('ada');
        const after = (await store.read('doc-3'))[1]?.payload as { body: unknown };
        expect(isErased(after.body)).toBe(true);
        expect((await store.verify('doc-3')).ok).toBe(true);
      });
    }

    it('encryption inside: the reference is encrypted, erasure hides the field, the content store keeps plaintext', async () => {
      const { log, content, keyring, items, close } = await open();
      closing.push(close);
      const encrypting = encryptingEventStore(log, { keyring, sensitive });
      const store = contentResolvingEventStore(
        externalizingEventStore(encrypting, content, { thresholdBytes: 1024 }),
        content,
      );
      await store.append([event('doc-2')]);
      const stored = (await log.read('doc-2'))[0]?.payload as { body: unknown };
      expect(stored.body).toMatchObject({ $enc: 'aes-256-gcm' });
      expect(((await store.read('doc-2'))[0]?.payload as { body: string } | undefined)?.body).toBe(
        body,
      );

      await encrypting.forget('ada');
      const after = (await store.read('doc-2'))[0]?.payload as { body: unknown };
      expect(isErased(after.body)).toBe(true);
      expect((await encrypting.verify('doc-2')).ok).toBe(true);
      // What this order does not erase: the bytes the externalizer moved before encryption.
      expect((await items()).some((text) => text.includes('confidential'))).toBe(true);
    });
  });
}
