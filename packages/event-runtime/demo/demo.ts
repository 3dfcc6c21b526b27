// The foundation demo: append to a SQLite event log, read it back, prove it with verify.
// (Once the kernel lands this becomes the kill-and-resume demo.)
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteEventStore } from '../src/sqlite.js';

const directory = join(process.cwd(), '.loom-demo');
mkdirSync(directory, { recursive: true });
const path = join(directory, `demo-${Date.now()}.db`);
const store = SqliteEventStore.open({ path, migrate: true });
const executionId = 'order-42';

await store.append([
  { executionId, sequence: 0, type: 'execution.started', payload: { input: { sku: 'loom-1' } } },
  { executionId, sequence: 1, type: 'step.started', payload: { name: 'reserve' } },
]);
await store.append([
  { executionId, sequence: 2, type: 'step.completed', payload: { name: 'reserve', result: 'r-7' } },
]);

console.log(`event log in ${path}`);
for (const event of await store.read(executionId)) {
  console.log(`  #${event.sequence} ${event.type.padEnd(18)} ${JSON.stringify(event.payload)}  ${event.hash.slice(0, 12)}…`);
}
console.log('verify:', JSON.stringify(await store.verify(executionId)));
try {
  await store.append([{ executionId, sequence: 0, type: 'execution.started', payload: {} }]);
} catch (error) {
  console.log(`a second start is refused: ${(error as { code: string }).code}`);
}
await store.close();
