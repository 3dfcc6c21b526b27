// Type-checked (never run) under moduleResolution NodeNext and Bundler with pg, better-sqlite3
// and their @types installed.
import { createRuntime, defineFlow, type Runtime } from '@loom/workflow-runtime';
import { openPostgres } from '@loom/workflow-runtime/postgres';
import { openSqlite } from '@loom/workflow-runtime/sqlite';

const greet = defineFlow({ name: 'greet' }, async (ctx, input: { name: string }) =>
  ctx.step('shout', () => `${input.name.toUpperCase()}!`),
);
const sqlite = openSqlite({ path: 'loom.db', migrate: true });
const postgres = await openPostgres({
  connectionString: 'postgres://root@127.0.0.1:5432/test',
  schema: 'loom',
  migrate: true,
});
export const runtimes: Runtime[] = [sqlite, postgres].map((backend) =>
  createRuntime({ backend, flows: [greet] }),
);
