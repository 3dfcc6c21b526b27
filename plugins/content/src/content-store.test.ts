import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { serverDropsConnections } from '@loom/event-runtime/testing/postgres';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { cachingContentStore } from './caching-content-store.js';
import type { ContentStore } from './content-store.js';
import { FileContentStore } from './file-content-store.js';
import { InMemoryContentStore } from './in-memory-content-store.js';
import { PostgresContentStore } from './postgres-content-store.js';
import { SqliteContentStore } from './sqlite-content-store.js';
import { contentStoreConformance } from './testing/content-store-conformance.js';
import { SlowContentStore } from './testing/slow-content-store.js';
import { pgTestUrl, useThrowaway } from './throwaway.test-support.js';

const spare = useThrowaway();

contentStoreConformance('memory', async (options) => {
  const store = new InMemoryContentStore(options);
  return {
    store,
    openPeer: async () => store,
    countStored: async () => store.size,
    close: () => store.close(),
  };
});

contentStoreConformance('memory, no getMany (readers fall back to get)', async (options) => {
  const inner = new InMemoryContentStore(options);
  const store = new SlowContentStore(inner, { withGetMany: false });
  expect(store.getMany).toBeUndefined();
  return {
    store,
    openPeer: async () => store,
    countStored: async () => inner.size,
    close: () => store.close(),
  };
});

function countFiles(directory: string): number {
  let files = 0;
  let folders: string[];
  try {
    folders = readdirSync(directory);
  } catch {
    return 0;
  }
  for (const folder of folders)
    files += readdirSync(join(directory, folder)).filter((name) => !name.startsWith('.')).length;
  return files;
}

contentStoreConformance('a directory', async (options) => {
  const directory = spare.freshPath('-content');
  const store = new FileContentStore({ directory, ...options });
  return {
    store,
    openPeer: async () => new FileContentStore({ directory }),
    countStored: async () => countFiles(directory),
    close: () => store.close(),
  };
});

contentStoreConformance('sqlite', async (options) => {
  const path = spare.freshPath('.db');
  const store = SqliteContentStore.open({ path, ...options });
  const side = new Database(path);
  const peers: ContentStore[] = [];
  return {
    store,
    openPeer: async () => {
      const peer = SqliteContentStore.open({ path });
      peers.push(peer);
      return peer;
    },
    countStored: async () =>
      (side.prepare('SELECT count(*) AS n FROM loom_content').get() as { n: number }).n,
    close: async () => {
      await Promise.all([store.close(), ...peers.map((peer) => peer.close())]);
      side.close();
    },
  };
});

contentStoreConformance('postgres', async (options) => {
  const schema = spare.freshSchema();
  const store = await PostgresContentStore.open({
    connectionString: pgTestUrl,
    schema,
    ...options,
  });
  const peers: ContentStore[] = [];
  return {
    store,
    openPeer: async () => {
      const peer = await PostgresContentStore.open({ pool: spare.admin, schema });
      peers.push(peer);
      return peer;
    },
    countStored: async () =>
      (await spare.admin.query(`SELECT count(*)::int AS n FROM "${schema}".content`)).rows[0].n,
    close: async () => {
      await Promise.all([store.close(), ...peers.map((peer) => peer.close())]);
      await spare.dropSchema(schema);
    },
  };
});

// A cache's peer is the backend itself: another process's cache is another cache (see ADR 0037).
contentStoreConformance('cache over postgres', async (options) => {
  const schema = spare.freshSchema();
  const backend = await PostgresContentStore.open({
    connectionString: pgTestUrl,
    schema,
    ...options,
  });
  const store = cachingContentStore(backend, { bytesMax: 4 * 1024 * 1024 });
  return {
    store,
    openPeer: async () => PostgresContentStore.open({ pool: spare.admin, schema }),
    countStored: async () =>
      (await spare.admin.query(`SELECT count(*)::int AS n FROM "${schema}".content`)).rows[0].n,
    close: async () => {
      await store.close();
      await spare.dropSchema(schema);
    },
  };
});

contentStoreConformance('cache over a store without getMany', async (options) => {
  const inner = new InMemoryContentStore(options);
  const store = cachingContentStore(new SlowContentStore(inner, { withGetMany: false }), {
    bytesMax: 1024,
  });
  return {
    store,
    openPeer: async () => inner,
    countStored: async () => inner.size,
    close: () => store.close(),
  };
});

describe('opening stores', () => {
  it('bad options are INVALID_ARGUMENT', async () => {
    const codeOf = (make: () => unknown) => {
      try {
        make();
      } catch (error) {
        return (error as { code: string }).code;
      }
      return 'made';
    };
    expect(codeOf(() => new InMemoryContentStore({ contentBytesMax: 0 }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => new FileContentStore({ directory: '' }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => SqliteContentStore.open({ path: '' }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => cachingContentStore(new InMemoryContentStore(), { bytesMax: -1 }))).toBe(
      'INVALID_ARGUMENT',
    );
    const refused = await PostgresContentStore.open({
      connectionString: pgTestUrl,
      schema: 'bad"schema',
    }).catch((error) => error);
    expect(refused.code).toBe('INVALID_ARGUMENT');
    expect(refused.fields.option).toBe('schema');
  });
});

describe('a Postgres content store whose connections the server drops (a restart, a failover)', () => {
  it('does not crash the process, and the next call connects again', async () => {
    const schema = spare.freshSchema();
    const name = `loom-content-drop-${process.pid}`;
    const store = await PostgresContentStore.open({
      connectionString: `${pgTestUrl}?application_name=${name}`,
      schema,
    });
    try {
      const ref = await store.put(new TextEncoder().encode('kept across a dropped connection'));
      expect(await serverDropsConnections(pgTestUrl, name)).toBeGreaterThan(0);
      // The idle connection's 57P01 reaches the pool as an 'error' event: unheard, it would end
      // this process. A call after it is served by a new connection (one retry if it raced the
      // dead one out of the pool).
      const bytes = await store.get(ref.$content).catch(() => store.get(ref.$content));
      expect(new TextDecoder().decode(bytes)).toBe('kept across a dropped connection');
    } finally {
      await store.close();
      await spare.dropSchema(schema);
    }
  });
});
