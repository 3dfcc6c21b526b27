import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { runtimeConformance } from '../testing/runtime-conformance.js';
import { sqliteRuntimeHarness } from '../testing/sqlite-harness.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-runtime-sqlite-'));
let counter = 0;
afterAll(() => rmSync(directory, { recursive: true, force: true }));

runtimeConformance('sqlite', () =>
  sqliteRuntimeHarness(join(directory, `runtime-${++counter}.db`)),
);

// Group commit is on by default (ADR 0040); the same suite with every append on its own.
runtimeConformance('sqlite, group commit off', async () => ({
  ...(await sqliteRuntimeHarness(join(directory, `runtime-${++counter}.db`))),
  runtimeOptions: { groupCommit: false },
}));
