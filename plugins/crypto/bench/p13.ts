// P13 — field encryption: what `encryptingEventStore` costs an append, side by side in one run.
//
// Four stores, each built once before anything is timed (the bench times appends, not the
// construction of a wrapper), each over its own in-memory event store (the cheapest inner store,
// so the wrapper's share is the largest it can be):
//   unwired        InMemoryEventStore
//   empty map      encryptingEventStore(…, { sensitive: {} })
//   other type     a map that names another event type: one map lookup per event, a miss
//   one field      the event's `email` encrypted (AES-256-GCM) under its subject's key
// One repeat appends `P13_BATCH` events (one per append, 256-byte payloads, executions of 8
// events) to each store in turn, the order rotated per repeat (A B C D, B C D A, …) so none
// always runs first or warm. Cost is this process's CPU time per append (user + system from
// process.cpuUsage, which other processes on the box hardly move); wall time is printed beside.
// A repeat's ratio is a variant's cost over the unwired store's in that same repeat; the table
// gives the median over the repeats and min..max.
//
//   pnpm --filter @loom/plugin-crypto bench      (P13_REPEATS=15, P13_BATCH=20000 by default)
import { arch, cpus, loadavg } from 'node:os';
import { type EventEnvelope, type EventStore, InMemoryEventStore } from '@loom/event-runtime';
import { encryptingEventStore, InMemoryKeyring, type SensitiveFields } from '../src/index.js';

const repeats = Number(process.env.P13_REPEATS ?? 15);
const batch = Number(process.env.P13_BATCH ?? 20_000);
if (!Number.isInteger(repeats) || repeats < 5)
  throw new Error(`P13_REPEATS must be ≥ 5, got ${repeats}`);
if (!Number.isInteger(batch) || batch < 1_000)
  throw new Error(`P13_BATCH must be ≥ 1000, got ${batch}`);

const keyring = new InMemoryKeyring();
const maps: Record<string, SensitiveFields | undefined> = {
  unwired: undefined,
  'empty map': {},
  'other type': { 'user.deleted': { subject: 'userId', fields: ['email'] } },
  'one field': { 'user.registered': { subject: 'userId', fields: ['email'] } },
};
const stores: Array<[string, EventStore]> = Object.entries(maps).map(([name, sensitive]) => {
  const inner = new InMemoryEventStore();
  return [
    name,
    sensitive === undefined ? inner : encryptingEventStore(inner, { sensitive, keyring }),
  ];
});

const eventsPerExecution = 8;
const note = 'x'.repeat(160);
let executions = 0;

/** Appends `batch` events, one per call, to `store`; CPU and wall ns per append. */
async function run(store: EventStore): Promise<{ cpuNs: number; wallNs: number }> {
  const ids = Array.from({ length: batch / eventsPerExecution }, () => `p13-${++executions}`);
  const cpuStart = process.cpuUsage();
  const wallStart = process.hrtime.bigint();
  for (const executionId of ids) {
    for (let sequence = 0; sequence < eventsPerExecution; sequence++) {
      const envelope: EventEnvelope = {
        executionId,
        sequence,
        type: 'user.registered',
        payload: { userId: `u-${sequence}`, email: 'ada@example.com', plan: 'pro', note },
      };
      await store.append([envelope]);
    }
  }
  const wallNs = Number(process.hrtime.bigint() - wallStart);
  const cpu = process.cpuUsage(cpuStart);
  return { cpuNs: ((cpu.user + cpu.system) * 1000) / batch, wallNs: wallNs / batch };
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
const span = (values: number[], digits: number) =>
  `${Math.min(...values).toFixed(digits)}..${Math.max(...values).toFixed(digits)}`;

const loadBefore = loadavg();
// One warm-up repeat, not counted.
for (const [, store] of stores) await run(store);
const cpu = new Map<string, number[]>(stores.map(([name]) => [name, []]));
const wall = new Map<string, number[]>(stores.map(([name]) => [name, []]));
const ratios = new Map<string, number[]>(stores.map(([name]) => [name, []]));
for (let repeat = 0; repeat < repeats; repeat++) {
  const order = stores.map(
    (_, index) => stores[(index + repeat) % stores.length] as [string, EventStore],
  );
  const costs = new Map<string, number>();
  for (const [name, store] of order) {
    const cost = await run(store);
    cpu.get(name)?.push(cost.cpuNs);
    wall.get(name)?.push(cost.wallNs);
    costs.set(name, cost.cpuNs);
  }
  for (const [name] of stores)
    ratios.get(name)?.push((costs.get(name) as number) / (costs.get('unwired') as number));
  process.stderr.write(`repeat ${repeat + 1}/${repeats}\r`);
}
const loadAfter = loadavg();

console.log(
  `P13 on ${cpus().length}× ${cpus()[0]?.model ?? 'cpu'} (${arch()}), Node ${process.version}, ` +
    `${new Date().toISOString()}, load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')} → ` +
    `${loadAfter.map((l) => l.toFixed(2)).join(' ')}; ${repeats} repeats × ${batch} appends of one event`,
);
console.log('');
console.log(
  '| Store | CPU µs / append (median, min..max) | wall µs / append | × unwired (median, min..max) |',
);
console.log('| --- | --- | --- | --- |');
for (const [name] of stores) {
  const c = cpu.get(name) as number[];
  const w = wall.get(name) as number[];
  const r = ratios.get(name) as number[];
  console.log(
    `| ${name} | ${(median(c) / 1000).toFixed(2)} (${span(
      c.map((v) => v / 1000),
      2,
    )}) | ${(median(w) / 1000).toFixed(2)} | ${median(r).toFixed(3)} (${span(r, 3)}) |`,
  );
}
