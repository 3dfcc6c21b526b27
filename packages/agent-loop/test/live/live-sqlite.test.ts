import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '@loom/event-runtime/sqlite';
import { killTestProcesses } from '@loom/event-runtime/testing';
import { afterEach, describe, it } from 'vitest';
import { liveAcrossWorkersCase } from './live-harness.js';

afterEach(killTestProcesses);

describe('text across workers (ADR 0050), on a SQLite file', () => {
  it("a follower in a third process gets every piece of the resuming worker's answer once, in order, across a reconnect", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-agent-live-sqlite-'));
    const path = join(dir, 'loom.db');
    await liveAcrossWorkersCase(
      async () => openSqlite({ path, migrate: true, pollIntervalMs: 20 }),
      { LIVE_BACKEND: 'sqlite', LIVE_DB: path },
      dir,
    );
  });
});
