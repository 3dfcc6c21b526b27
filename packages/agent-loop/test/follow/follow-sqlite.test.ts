import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { describe, it } from 'vitest';
import { followByIdCase } from './follow-harness.js';

describe('a second process follows a run by id, on a SQLite file', () => {
  it('gets the durable events from the log, then the live ones, in order, once each', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-agent-follow-sqlite-'));
    const path = join(dir, 'loom.db');
    const store = SqliteEventStore.open({ path, migrate: true, pollIntervalMs: 20 });
    try {
      await followByIdCase(store, { FOLLOW_BACKEND: 'sqlite', FOLLOW_DB: path }, dir);
    } finally {
      await store.close();
    }
  });
});
