// `pnpm demo`: a durable flow on the embedded SQLite default is started in a worker process,
// the demo kills that process (SIGKILL) in the middle of a step, starts a new one, and the
// execution resumes from the last completed step. Everything printed comes from the real log.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '../src/sqlite.js';

const directory = join(process.cwd(), '.loom-demo');
mkdirSync(directory, { recursive: true });
const db = join(directory, `demo-${Date.now()}.db`);
const executionId = 'order-42';
const worker = join(import.meta.dirname, 'demo-worker.ts');

function runWorker(label: string, killAfter?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', worker, db, executionId], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    console.log(`\n▶ ${label} (pid ${child.pid})`);
    let buffered = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        console.log(`  ${line}`);
        if (killAfter !== undefined && line.includes(killAfter)) {
          setTimeout(() => {
            console.log(`  💥 SIGKILL to pid ${child.pid}, in the middle of that step`);
            child.kill('SIGKILL');
          }, 150);
        }
        newline = buffered.indexOf('\n');
      }
    });
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL' || code === 0) resolve();
      else reject(new Error(`worker exited with ${code}`));
    });
  });
}

console.log(`Loom demo: one durable execution, log in ${db}`);
await runWorker('worker 1 starts the order flow', 'running step charge-card');
await runWorker('worker 2 starts after the crash and recovers');

const backend = openSqlite({ path: db, readOnly: true });
const store = backend.events;
console.log(`\nThe log of ${executionId}:`);
for (const event of await store.read(executionId)) {
  const payload = JSON.stringify(event.payload);
  console.log(
    `  #${String(event.sequence).padStart(2)} ${event.type.padEnd(20)} ${payload.length > 60 ? `${payload.slice(0, 57)}...` : payload}`,
  );
}
const verify = await store.verify(executionId);
console.log(
  `\nverify: ${verify.ok ? `hash chain intact over ${verify.events} events` : `BROKEN: ${JSON.stringify(verify)}`}`,
);
await backend.close();
