// A worker process for ctx.waitForEvent and cancelOn across processes. `checkout` waits for
// 'shop/order.paid' of its order and appends `took <executionId> <eventId> <pid>` when it gets
// it; `ship` is cancelled by 'shop/order.cancelled' of its order. In mode `start` the worker
// starts checkout `c-1` (order o-1) and ship `s-1` (o-2), `s-2` (o-3) after booting (idempotent
// by id); in mode `serve` it only runs what it is given. In mode `held` it delivers no events,
// starts checkout `c-2` (order o-4), and its store holds the wait's start write (stamped with its
// time) until the file `<log file>.release` exists, saying `held` on stdout once it holds it.
// argv: <sqlite:path | postgres:schema> <log file> <start | serve | held>
import { appendFileSync, existsSync } from 'node:fs';
import { openPostgres } from '@loom/event-runtime/postgres';
import { openSqlite } from '@loom/event-runtime/sqlite';
import { HeldWaitStart } from '../../src/flow/held-wait-start.test-support.js';
import { createRuntime, defineFlow } from '../../src/index.js';

const [target, logFile, mode] = process.argv.slice(2) as [
  string,
  string,
  'start' | 'serve' | 'held',
];
const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

const checkout = defineFlow(
  { name: 'checkout', waitsForEvents: ['shop/order.paid'] },
  async (ctx, input: { orderId: string }) => {
    const paid = await ctx.waitForEvent('shop/order.paid', {
      match: { 'data.orderId': input.orderId },
      timeout: '10m',
    });
    if (!paid.received) return 'timed out';
    return ctx.step('took', () => {
      appendFileSync(logFile, `took ${ctx.executionId} ${paid.event.id} ${process.pid}\n`);
      return paid.event.id;
    });
  },
);

const ship = defineFlow(
  {
    name: 'ship',
    cancelOn: [{ event: 'shop/order.cancelled', match: { 'data.orderId': 'input.orderId' } }],
  },
  async (ctx, _input: { orderId: string }) => {
    await ctx.waitForSignal('shipped');
    return 'shipped';
  },
);

const backend = target.startsWith('sqlite:')
  ? openSqlite({ path: target.slice('sqlite:'.length), busyTimeoutMs: 10_000 })
  : await openPostgres({ connectionString: pgUrl, schema: target.slice('postgres:'.length) });
const settings = { flows: [checkout, ship], timerPollMs: 50, recoverQuietMs: 1 };
let held: HeldWaitStart | undefined;
if (mode === 'held') {
  const released = new Promise<void>((resolve) => {
    const look = () => (existsSync(`${logFile}.release`) ? resolve() : setTimeout(look, 10));
    look();
  });
  held = new HeldWaitStart(backend.events, released);
  void held.held.then(() => process.stdout.write('held\n'));
}
const runtime =
  held === undefined
    ? createRuntime({ backend, ...settings, eventDelivery: { pollMs: 20, claimTtlMs: 600 } })
    : createRuntime({
        store: held,
        leases: backend.leases,
        queues: backend.queues,
        ...settings,
        eventDelivery: false,
      });
await runtime.recover();
if (mode === 'held') await runtime.start(checkout, { orderId: 'o-4' }, { executionId: 'c-2' });
if (mode === 'start') {
  await runtime.start(checkout, { orderId: 'o-1' }, { executionId: 'c-1' });
  await runtime.start(ship, { orderId: 'o-2' }, { executionId: 's-1' });
  await runtime.start(ship, { orderId: 'o-3' }, { executionId: 's-2' });
}
process.stdout.write('ready\n');
await runtime.serve();
