// Writer process for remote-wake.test.ts: appends `events` events to each of `executions`
// executions (all concurrently, one event per call), closes its store (which sends the
// announcements still pending) and prints its stats as one JSON line.
import { PostgresEventStore } from '../../src/postgres.js';

const [url, schema, prefix, executions, events] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];

const store = await PostgresEventStore.open({ connectionString: url, schema });
let appends = 0;
await Promise.all(
  Array.from({ length: Number(executions) }, async (_, index) => {
    for (let sequence = 0; sequence < Number(events); sequence++) {
      await store.append([
        { executionId: `${prefix}-${index}`, sequence, type: 'test.event', payload: { sequence } },
      ]);
      appends++;
    }
  }),
);
await store.close();
process.stdout.write(`${JSON.stringify({ appends, ...store.stats })}\n`);
