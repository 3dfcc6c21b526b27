// A worker process for the Postgres fault tests: drives LOOM_FAULT_EXECS executions (all at
// once) of a plain-step or a transactional flow on LOOM_FAULT_URL / LOOM_FAULT_SCHEMA while the
// test kills its connections or restarts the server. It waits for every handle, then prints one
// `result {...}` line. Any unhandled error ends the process with a non-zero exit code, which the
// test asserts is 0: surviving is the point.
import type pg from 'pg';
import type { Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { PostgresEventStore } from '../../src/postgres.js';

const url = process.env.LOOM_FAULT_URL as string;
const schema = process.env.LOOM_FAULT_SCHEMA as string;
const execs = Number(process.env.LOOM_FAULT_EXECS ?? 200);
const mode = process.env.LOOM_FAULT_MODE === 'transactional' ? 'transactional' : 'plain';
const settleDeadlineMs = Number(process.env.LOOM_FAULT_DEADLINE_MS ?? 25_000);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const plain: Flow<{ index: number }, number> = {
  name: 'fault-plain',
  run: async (ctx, input) => {
    let total = 0;
    for (let step = 0; step < 4; step++) {
      total += await ctx.step(`step-${step}`, async () => {
        await pause(1 + ((input.index * 7 + step * 13) % 10));
        return step;
      });
    }
    return total;
  },
};

const transactional: Flow<{ index: number }, number> = {
  name: 'fault-transactional',
  run: async (ctx, input) => {
    await ctx.step('before', () => pause(1 + (input.index % 5)));
    // The backend may be killed while this transaction is open and idle (during the pause).
    const rows = await ctx.transaction('record', async (tx) => {
      const client = tx as pg.ClientBase;
      await pause(1 + (input.index % 7));
      const inserted = await client.query(
        `INSERT INTO "${schema}".fault_side (execution_id) VALUES ($1)`,
        [ctx.executionId],
      );
      return inserted.rowCount ?? 0;
    });
    await ctx.step('after', () => pause(1));
    return rows;
  },
};

const flow = (mode === 'plain' ? plain : transactional) as Flow<{ index: number }, number>;
const errors: string[] = [];
/** Every error by code (`errors` keeps only the first ten), and the messages of the rare ones. */
const errorCounts: Record<string, number> = {};
const rareErrors: string[] = [];
const noteError = (error: unknown, where = '') => {
  const code = String((error as { code?: string }).code ?? 'no code');
  errors.push(`${where}${String((error as { code?: string }).code ?? error)}`);
  errorCounts[code] = (errorCounts[code] ?? 0) + 1;
  if (code !== 'STORE_UNAVAILABLE' && rareErrors.length < 10) {
    rareErrors.push(`${code}: ${(error as Error).message ?? String(error)}`);
  }
};
const store = await PostgresEventStore.open({ connectionString: url, schema, pollIntervalMs: 200 });
const runtime = createKernelRuntime({
  store,
  flows: [flow as Flow<never, unknown>],
  storeRetryDelayMs: 20,
  storeRetryDelayMaxMs: 250,
  onError: noteError,
});

let claimsLost = 0;
let claimsRegained = 0;
runtime.events.on('node:claim_lost', () => claimsLost++);
runtime.events.on('node:claimed', () => claimsRegained++);
/** What the runtime said about each execution (leases lost, resumes, recoveries, retried appends). */
const history = new Map<string, string[]>();
for (const type of [
  'lease:lost',
  'execution:resumed',
  'execution:recovered',
  'append:retried',
] as const) {
  runtime.events.on(type, (event: { executionId: string }) => {
    const seen = history.get(event.executionId) ?? [];
    seen.push(type);
    history.set(event.executionId, seen);
  });
}

/** start(), again with the same id while the store is unavailable (idempotent start). */
async function startWithRetry(index: number): Promise<{ done: Promise<number> }> {
  const executionId = `fault-${index}`;
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await runtime.start(flow, { index }, { executionId });
      return { done: handle.result() };
    } catch (error) {
      const code = (error as { code?: string }).code;
      if ((code !== 'STORE_UNAVAILABLE' && code !== 'STORE_BUSY') || attempt >= 200) throw error;
      await pause(25);
    }
  }
}

const results = await Promise.all(
  Array.from({ length: execs }, (_, index) => startWithRetry(index)),
);
process.stdout.write('started\n');
let settled = 0;
let failed = 0;
const unsettled = new Set(results.map((_, index) => `fault-${index}`));
const outcomes = results.map(({ done }, index) =>
  done.then(
    () => {
      settled++;
      unsettled.delete(`fault-${index}`);
    },
    (error: unknown) => {
      failed++;
      unsettled.delete(`fault-${index}`);
      noteError(error, 'result: ');
    },
  ),
);
let deadline: NodeJS.Timeout | undefined;
const timedOut = await Promise.race([
  Promise.all(outcomes).then(() => false),
  new Promise<boolean>((resolve) => {
    deadline = setTimeout(() => resolve(true), settleDeadlineMs);
  }),
]);
clearTimeout(deadline);
// A handle can settle from the log a moment before the driver that wrote the terminal event
// has finished its bookkeeping: give the drivers a (bounded) moment to leave.
for (let round = 0; round < 200 && runtime.activeExecutions.length > 0; round++) await pause(10);
const stillRunning = runtime.activeExecutions.length;
// What a stranded execution looked like, for the failure message.
const stranded = await Promise.all(
  [...unsettled].slice(0, 5).map(async (id) => ({
    id,
    driving: runtime.activeExecutions.includes(id),
    said: history.get(id) ?? [],
    events: (await store.read(id).catch(() => [])).map((event) => event.type),
  })),
);
process.stdout.write(
  `result ${JSON.stringify({ execs, settled, failed, timedOut, stillRunning, claimsLost, claimsRegained, claimLostAtEnd: runtime.claimLost, errors: errors.slice(0, 10), errorCounts, rareErrors, stranded })}\n`,
);
await runtime.shutdown();
await store.close();
process.stdout.write('closed\n');
