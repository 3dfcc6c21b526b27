// Encryption (@loom/plugin-crypto) and externalisation compose in either order (issue 16). With
// encryption outside, a large sensitive field is stored once, as ciphertext, in the content store,
// and forgetting its subject makes it unreadable. With encryption inside, the reference is what
// is encrypted: forgetting the subject makes the field unreadable through the log, but the
// content store keeps the plaintext bytes (docs/payloads.md: wire encryption outside).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EventStore, InMemoryEventStore } from '@loom/event-runtime';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { encryptingEventStore, InMemoryKeyring, isErased } from '@loom/plugin-crypto';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type ContentKey,
  type ContentStore,
  contentResolvingEventStore,
  externalizingEventStore,
  InMemoryContentStore,
} from '../src/index.js';
import { SqliteContentStore } from '../src/sqlite.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-compose-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const body = 'confidential clause; '.repeat(2_000); // ~42 KB
const sensitive = { 'doc.uploaded': { subject: 'owner', fields: ['body'] } };
const event = (executionId: string) => ({
  executionId,
  sequence: 0,
  type: 'doc.uploaded',
  payload: { owner: 'ada', title: 'contract', body },
});

interface Backend {
  log: EventStore;
  content: ContentStore;
  /** Every content item's bytes, as text. */
  items(): Promise<string[]>;
}

const backends: Array<[string, () => Backend]> = [
  [
    'memory',
    () => {
      const content = new InMemoryContentStore();
      const keys: ContentKey[] = [];
      const put = content.put.bind(content);
      content.put = async (bytes) => {
        const ref = await put(bytes);
        keys.push(ref.$content);
        return ref;
      };
      return {
        log: new InMemoryEventStore(),
        content,
        items: async () => {
          const found = await content.getMany([...new Set(keys)]);
          return [...found.values()].map((bytes) => Buffer.from(bytes).toString('utf8'));
        },
      };
    },
  ],
  [
    'sqlite',
    () => {
      const name = `${Math.random().toString(36).slice(2)}.db`;
      const log = SqliteEventStore.open({ path: join(directory, `log-${name}`), migrate: true });
      const contentPath = join(directory, `content-${name}`);
      const content = SqliteContentStore.open({ path: contentPath });
      return {
        log,
        content,
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
      };
    },
  ],
];

for (const [name, open] of backends) {
  describe(`encryption and content on ${name}`, () => {
    it('encryption outside: the field is stored once, as ciphertext, and erasure makes it unreadable', async () => {
      const { log, content, items } = open();
      const store = encryptingEventStore(
        contentResolvingEventStore(
          externalizingEventStore(log, content, { thresholdBytes: 1024 }),
          content,
        ),
        { keyring: new InMemoryKeyring(), sensitive },
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
      await store.close();
    });

    it('encryption inside: the reference is encrypted, erasure hides the field, the content store keeps plaintext', async () => {
      const { log, content, items } = open();
      const encrypting = encryptingEventStore(log, { keyring: new InMemoryKeyring(), sensitive });
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
      await store.close();
    });
  });
}
