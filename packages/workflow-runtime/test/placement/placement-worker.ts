// A process of the placement tests. Two roles:
//   effects <port> <log file> <hang | ok>
//     serves the effects 'embed' and 'slow' on 127.0.0.1:<port>. 'slow' appends
//     "<attempt> <pid> <idempotency key>" to the log file, then hangs forever (hang) or answers (ok).
//   runtime <sqlite:path | postgres:schema> <tags, comma-separated or -> <start | recover | work> <log file> <hang | ok>
//     a runtime with those tags driving the flows 'render' (placement tags [gpu]) and 'plain':
//     start starts one execution of each ('render-1', 'plain-1'); recover only recovers; work
//     also works the queue 'gpu-jobs'. Each flow's step appends "<flow> <pid>" to the log file,
//     then hangs forever (hang) or returns { pid, tags }.
// Prints "ready <url or nodeId>" once serving.
import { appendFileSync } from 'node:fs';
import { createRuntime, defineEffect, defineFlow, serveEffects } from '../../src/index.js';
import { openPostgres } from '../../src/postgres.js';
import { openSqlite } from '../../src/sqlite.js';

const [role, ...args] = process.argv.slice(2) as [string, ...string[]];
const forever = () => new Promise<never>(() => undefined);

if (role === 'effects') {
  const [port, logFile, mode] = args as [string, string, 'hang' | 'ok'];
  const embed = defineEffect('embed', (input: { text: string }) => ({
    vector: [...input.text].map((char) => char.charCodeAt(0)),
    pid: process.pid,
  }));
  const slow = defineEffect('slow', async (input: { n: number }, context) => {
    appendFileSync(logFile, `${context.attempt} ${process.pid} ${context.idempotencyKey}\n`);
    if (mode === 'hang') await forever();
    return { doubled: input.n * 2, pid: process.pid, attempt: context.attempt };
  });
  const server = await serveEffects({ effects: [embed, slow], port: Number(port) });
  process.stdout.write(`ready ${server.url}\n`);
} else {
  const [target, tagList, mode, logFile, hang] = args as [
    string,
    string,
    'start' | 'recover' | 'work',
    string,
    'hang' | 'ok',
  ];
  const tags = tagList === '-' ? [] : tagList.split(',');
  const body = (flow: string) => async () => {
    appendFileSync(logFile, `${flow} ${process.pid}\n`);
    if (hang === 'hang') await forever();
    return { pid: process.pid, tags };
  };
  const render = defineFlow({ name: 'render', placement: { tags: ['gpu'] } }, async (ctx) =>
    ctx.step('draw', body('render')),
  );
  const plain = defineFlow({ name: 'plain' }, async (ctx) => ctx.step('work', body('plain')));
  const runtime = createRuntime({
    backend: target.startsWith('sqlite:')
      ? openSqlite({ path: target.slice('sqlite:'.length), busyTimeoutMs: 10_000 })
      : await openPostgres({
          connectionString: process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test',
          schema: target.slice('postgres:'.length),
        }),
    flows: [render, plain],
    tags,
    leaseMode: 'eager',
    leaseTtlMs: 1_000,
    recoverEveryMs: 200,
  });
  await runtime.recover();
  if (mode === 'start') {
    await runtime.start(render, undefined, { executionId: 'render-1' });
    await runtime.start(plain, undefined, { executionId: 'plain-1' });
  }
  if (mode === 'work') runtime.work('gpu-jobs', { pollMs: 50 });
  process.stdout.write(`ready ${runtime.nodeId}\n`);
  process.on('SIGTERM', () => void runtime.shutdown());
  await runtime.serve();
}
