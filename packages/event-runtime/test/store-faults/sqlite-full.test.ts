// SQLite that cannot write (issue 14): a database full at its max_page_count (how a full disk
// looks to SQLite), a connection made query_only, and a file opened read-only. Each write is
// refused with a typed LoomError naming the problem, nothing of it is stored, what was stored
// before reads back the same and verifies, and a running execution caught by a full disk goes
// on once space is freed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCode, type Flow, isLoomError, type StoredEvent } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { openSqlite, type SqliteBackend } from '../../src/sqlite.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-sqlite-full-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
let counter = 0;

/** Runs of the step's effect. */
let grows = 0;

/** A flow whose one step returns `size` characters: big enough to need new pages. */
const flow: Flow<number, number> = {
  name: 'sqlite-full-flow',
  run: async (ctx, size) => {
    const text = await ctx.step('grow', () => {
      grows += 1;
      return 'x'.repeat(size);
    });
    return text.length;
  },
};

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return isLoomError(error) ? error.code : `not a LoomError: ${String(error)}`;
  }
  return 'accepted';
}

async function everything(backend: SqliteBackend): Promise<StoredEvent[]> {
  return backend.events.readAll({ limit: 10_000 });
}

function open(path = join(directory, `full-${++counter}.db`)) {
  const backend = openSqlite({ path, migrate: true });
  const runtime = createKernelRuntime({
    store: backend.events,
    leases: backend.leases,
    flows: [flow as Flow<never, unknown>],
    storeRetryDelayMs: 10,
    storeRetryDelayMaxMs: 50,
  });
  return { path, backend, runtime };
}

describe('SQLite that cannot write', () => {
  it('a full database refuses a start with STORE_FULL, stores nothing of it, and keeps what it had', async () => {
    const { backend, runtime } = open();
    const done = await runtime.start(flow, 10_000, { executionId: 'before' });
    expect(await done.result()).toBe(10_000);
    const before = await everything(backend);
    const pages = backend.events.database.pragma('page_count', { simple: true }) as number;
    backend.events.database.pragma(`max_page_count = ${pages}`);

    for (let index = 0; index < 5; index++) {
      const code = await codeOf(
        runtime.start(flow, 1, { executionId: `refused-${index}` }).then(() =>
          // The start itself may fit in a page with room; its big step cannot.
          backend.events.append([
            {
              executionId: `direct-${index}`,
              sequence: 0,
              type: 'execution.started',
              payload: { flow: 'x', version: null, input: 'y'.repeat(200_000) },
            },
          ]),
        ),
      );
      expect(code).toBe(ErrorCode.STORE_FULL);
      expect(await backend.events.read(`direct-${index}`)).toEqual([]);
    }
    const after = await everything(backend);
    expect(after.slice(0, before.length)).toEqual(before);
    expect((await backend.events.verify('before')).ok).toBe(true);
    expect(backend.events.database.pragma('integrity_check', { simple: true })).toBe('ok');
    await runtime.shutdown();
    await backend.close();
  });

  it('an execution whose step result meets a full disk waits, and completes once space is freed', async () => {
    const { backend, runtime } = open();
    expect(await (await runtime.start(flow, 10, { executionId: 'warm' })).result()).toBe(10);
    const pages = backend.events.database.pragma('page_count', { simple: true }) as number;
    backend.events.database.pragma(`max_page_count = ${pages}`);
    const runsBefore = grows;
    const handle = await runtime.start(flow, 300_000, { executionId: 'caught' });
    // The result could not be recorded (STORE_FULL is transient): the runtime resumed the
    // execution from the log, which ran the effect again. Wait for a few of those rounds.
    const deadline = Date.now() + 20_000;
    while (grows - runsBefore < 3) {
      if (Date.now() > deadline) throw new Error(`the effect ran ${grows - runsBefore} times`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const stalled = (await backend.events.read('caught')).map((event) => event.type);
    expect(stalled).not.toContain('step.completed');
    expect((await backend.events.verify('caught')).ok).toBe(true);
    backend.events.database.pragma('max_page_count = 1073741823');
    expect(await handle.result()).toBe(300_000);
    const events = await backend.events.read('caught');
    expect(events.filter((event) => event.type === 'step.completed')).toHaveLength(1);
    expect(events.filter((event) => event.type === 'execution.completed')).toHaveLength(1);
    // Resumes after a store failure are not crashes: none counted toward the poison budget.
    expect(events.filter((event) => event.type === 'step.interrupted')).toEqual([]);
    expect((await backend.events.verify('caught')).ok).toBe(true);
    await runtime.shutdown();
    await backend.close();
  });

  it('a query_only connection refuses writes with STORE_READ_ONLY and the log verifies after', async () => {
    const { backend, runtime } = open();
    expect(await (await runtime.start(flow, 10, { executionId: 'kept' })).result()).toBe(10);
    const before = await everything(backend);
    backend.events.database.pragma('query_only = ON');
    expect(await codeOf(runtime.start(flow, 10, { executionId: 'refused' }))).toBe(
      ErrorCode.STORE_READ_ONLY,
    );
    expect(await everything(backend)).toEqual(before);
    backend.events.database.pragma('query_only = OFF');
    expect((await backend.events.verify('kept')).ok).toBe(true);
    expect(await (await runtime.start(flow, 10, { executionId: 'after' })).result()).toBe(10);
    await runtime.shutdown();
    await backend.close();
  });

  it('a file opened read-only refuses a start with STORE_READ_ONLY and still reads', async () => {
    const { path, backend, runtime } = open();
    expect(await (await runtime.start(flow, 10, { executionId: 'kept' })).result()).toBe(10);
    await runtime.shutdown();
    await backend.close();
    const reader = openSqlite({ path, readOnly: true });
    const readOnly = createKernelRuntime({
      store: reader.events,
      flows: [flow as Flow<never, unknown>],
    });
    expect(await codeOf(readOnly.start(flow, 10, { executionId: 'refused' }))).toBe(
      ErrorCode.STORE_READ_ONLY,
    );
    expect(await reader.events.read('refused')).toEqual([]);
    expect((await reader.events.verify('kept')).ok).toBe(true);
    await readOnly.shutdown();
    await reader.close();
  });
});
