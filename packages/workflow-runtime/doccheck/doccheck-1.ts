import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import { openPostgres } from '@loom/workflow-runtime/postgres';

const hello = defineFlow({ name: 'hello' }, async (ctx, input: { name: string }) =>
  ctx.step('greet', () => `hello, ${input.name}`),
);

const backend = await openPostgres({
  connectionString: process.env.DATABASE_URL ?? 'postgres://localhost/app',
  schema: 'loom',
  migrate: true, // or run backend.migrate() once at deploy time
});
const runtime = createRuntime({ backend, flows: [hello], recoverEveryMs: 10_000 });
await runtime.recover();
process.on('SIGTERM', () => void runtime.shutdown());
await runtime.serve(); // polls timers, recovers, drives executions until shutdown()

export {};
