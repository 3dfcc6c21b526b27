// Cost of a placed effect: the same one-step flow with its effect run here (local placement)
// and on an effect server in this process over 127.0.0.1 HTTP (remote placement), on the memory
// backend, interleaved A B A B, median of 7 rounds of 300 sequential executions each.
// Run: pnpm --filter @loom/workflow-runtime exec tsx bench/placement.ts
import { cpus, loadavg } from 'node:os';
import {
  createRuntime,
  defineEffect,
  defineFlow,
  openMemory,
  PlacementDispatcher,
  serveEffects,
} from '../src/index.js';

const echo = defineEffect('echo', (input: { n: number }) => ({ n: input.n + 1 }));
const server = await serveEffects({ effects: [echo] });
const local = new PlacementDispatcher({ tags: ['gpu'], effects: [echo] });
const remote = new PlacementDispatcher({
  remotes: [{ name: 'r', url: server.url, tags: ['gpu'] }],
});
const flowOf = (name: string, placement: PlacementDispatcher) =>
  defineFlow({ name }, async (ctx, input: { n: number }) =>
    ctx.step('echo', placement.effect(echo, input, { tags: ['gpu'] })),
  );
const variants = { local: flowOf('local', local), remote: flowOf('remote', remote) };
const runtime = createRuntime({ backend: openMemory(), flows: Object.values(variants) });
const executions = 300;
const rounds = 7;
const samples: Record<string, number[]> = { local: [], remote: [] };
for (let round = 0; round < rounds + 1; round++) {
  for (const [name, flow] of Object.entries(variants)) {
    const started = performance.now();
    for (let i = 0; i < executions; i++) await (await runtime.start(flow, { n: i })).result();
    const usPerExecution = ((performance.now() - started) * 1000) / executions;
    if (round > 0) samples[name]?.push(usPerExecution); // round 0 warms up
  }
}
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const range = (values: number[]) =>
  `${Math.min(...values).toFixed(0)}..${Math.max(...values).toFixed(0)}`;
console.log(
  `${new Date().toISOString()} node ${process.version}, ${cpus().length} cores, load ${loadavg()[0]?.toFixed(2)}`,
);
console.log('| placement | µs per 1-step execution (median) | min..max |');
console.log('|---|---|---|');
for (const name of Object.keys(variants)) {
  const values = samples[name] as number[];
  console.log(`| ${name} | ${median(values).toFixed(0)} | ${range(values)} |`);
}
console.log(
  `remote / local: ${(median(samples.remote as number[]) / median(samples.local as number[])).toFixed(1)}×`,
);
await runtime.shutdown();
await server.close();
