import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import {
  cachingContentStore,
  contentResolvingEventStore,
  externalizingEventStore,
  isMissingContent,
} from '@loom/plugin-content';
import { SqliteContentStore } from '@loom/plugin-content/sqlite';

// The log and its content in one SQLite file (':memory:' here: two separate in-memory databases).
const log = SqliteEventStore.open({ path: ':memory:', migrate: true });
const content = cachingContentStore(SqliteContentStore.open({ path: ':memory:' }), {
  bytesMax: 64 * 1024 * 1024,
});
const store = contentResolvingEventStore(
  externalizingEventStore(log, content, { thresholdBytes: 32 * 1024 }),
  content,
);

// A 300 KB tool observation becomes a reference in the log; reads give the full payload back.
const observation = 'row,'.repeat(75_000);
await store.append([
  {
    executionId: 'agent-1',
    sequence: 0,
    type: 'tool.observed',
    payload: { tool: 'sql', observation },
  },
]);
const [stored] = await log.read('agent-1');
export const inTheLog = stored?.payload; // { tool: 'sql', observation: { $content: 'sha256:…', bytes: 300002 } }
const [read] = await store.read('agent-1');
export const readBack = (read!.payload as { observation: string }).observation.length; // 300000

// Erasing the content: the read shows a marker, and the hash chain still verifies.
const ref = (inTheLog as { observation: { $content: `sha256:${string}` } }).observation;
await content.delete(ref.$content);
const [erased] = await store.read('agent-1');
export const missing = isMissingContent((erased!.payload as { observation: unknown }).observation); // true
export const verified = (await store.verify('agent-1')).ok; // true
await store.close();
await content.close();
