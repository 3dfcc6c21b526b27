// The flow of the per-key throttle process test (ADR 0059). Its first step reads its own queue
// item and records the claim it runs under — (item, attempts, startedAtMs), idempotent — in
// flowctl_starts, then enters and exits through tenant-flow.ts's recorder (flowctl_running tells
// the test which worker holds a run). The store's start time, not the flow's clock, is what the
// throttle counts, so the test checks the recorded claims against the window exactly.
import type { PostgresBackend } from '@loom/event-runtime/postgres';
import type { SqliteBackend } from '@loom/event-runtime/sqlite';
import { defineFlow } from '../../src/index.js';
import { type Recorder, recorderOf, type TenantInput } from './tenant-flow.js';

export const throttleQueue = 'throttled';
/** Starts per tenant per window, the window, the tenants and the items the test enqueues. */
export const throttleLimit = 2;
export const throttlePeriodMs = 1_000;
export const throttleTenants = ['t0', 't1', 't2'];
export const throttleItemCount = 30;

/** Creates flowctl_starts (the test calls it once, after tenant-flow.ts's createTables). */
export async function createStartsTable(backend: SqliteBackend | PostgresBackend): Promise<void> {
  const ddl =
    'CREATE TABLE flowctl_starts (item_id text NOT NULL, tenant text NOT NULL, attempts integer NOT NULL, ' +
    'started_at_ms bigint NOT NULL, PRIMARY KEY (item_id, attempts))';
  if (backend.kind === 'sqlite') backend.events.database.exec(ddl);
  else {
    await backend.events.connectionPool.query(
      ddl.replace(/TABLE (\w+)/, `TABLE "${backend.schema}".$1`),
    );
  }
}

/** Records the claim an item runs under, read from the queue store. */
async function recordStart(
  backend: SqliteBackend | PostgresBackend,
  input: TenantInput,
): Promise<void> {
  const item = await backend.queues.get(throttleQueue, input.id);
  if (item?.startedAtMs == null) throw new Error(`item ${input.id} runs without a claim`);
  const values = [input.id, input.tenant, item.attempts, item.startedAtMs];
  const insert =
    'INSERT INTO flowctl_starts (item_id, tenant, attempts, started_at_ms) VALUES ' +
    '($1, $2, $3, $4) ON CONFLICT DO NOTHING';
  if (backend.kind === 'sqlite') {
    backend.events.database.prepare(insert.replace(/\$\d/g, '?')).run(...values);
  } else {
    await backend.events.connectionPool.query(
      insert.replace('INTO flowctl_starts', `INTO "${backend.schema}".flowctl_starts`),
      values,
    );
  }
}

/** The flow: at most `throttleLimit` starts per tenant per `throttlePeriodMs`, across workers. */
export function throttledFlow(backend: SqliteBackend | PostgresBackend | undefined) {
  const recorder: Recorder | undefined = backend === undefined ? undefined : recorderOf(backend);
  return defineFlow(
    {
      name: 'throttled-job',
      throttle: {
        key: (input: TenantInput) => input.tenant,
        limit: throttleLimit,
        periodMs: throttlePeriodMs,
      },
    },
    async (ctx, input) => {
      await ctx.step('enter', async () => {
        if (backend !== undefined) await recordStart(backend, input);
        await recorder?.enter(input, process.pid);
      });
      await ctx.step('work', () => new Promise<void>((resolve) => setTimeout(resolve, 400)));
      await ctx.step('exit', () => recorder?.exit(input, process.pid));
      return input.id;
    },
  );
}
