import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll } from 'vitest';
import { SqliteEventStore } from '../store/sqlite/sqlite-event-store.js';
import { SqliteLeaseStore } from '../store/sqlite/sqlite-lease-store.js';
import { SqliteSnapshotStore } from '../store/sqlite/sqlite-snapshot-store.js';
import { ManualClock } from '../testing/manual-clock.js';
import { runtimeConformance } from '../testing/runtime-conformance.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-runtime-sqlite-'));
let counter = 0;
afterAll(() => rmSync(directory, { recursive: true, force: true }));

runtimeConformance('sqlite', async () => {
  const clock = new ManualClock();
  const path = join(directory, `runtime-${++counter}.db`);
  const store = SqliteEventStore.open({ path, migrate: true, clock });
  const side = new Database(path);
  const count = side.prepare('SELECT count(*) AS n FROM loom_events WHERE execution_id = ?');
  return {
    store,
    leases: new SqliteLeaseStore(store.database, { clock }),
    snapshots: new SqliteSnapshotStore(store.database),
    clock,
    countRows: async (executionId) => (count.get(executionId) as { n: number }).n,
    close: async () => {
      side.close();
      await store.close();
    },
  };
});
