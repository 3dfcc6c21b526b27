import { createRuntime, InMemoryEventStore } from '@loom/event-runtime';
import { benchFlow, payload256 } from './bench-flows.js';

const store = new InMemoryEventStore();
const runtime = createRuntime({ store });
const flow = benchFlow(1, 0);
const input = payload256();
async function run(n: number, c: number, prefix: string) {
  let next = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: c }, async () => {
      for (;;) {
        const i = next++;
        if (i >= n) return;
        const h = await runtime.start(flow, input, { executionId: `${prefix}-${i}` });
        await h.result();
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  const ms = performance.now() - t0;
  console.log(
    prefix,
    'exec/s',
    Math.round((n * 1000) / ms),
    'cpu us/exec',
    ((cpu.user + cpu.system) / n).toFixed(1),
  );
}
await run(5000, 16, 'warm');
await run(20000, 16, 'c16');
await run(20000, 1, 'c1');
await run(20000, 256, 'c256');
