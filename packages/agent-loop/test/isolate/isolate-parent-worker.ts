// A process that warms an isolated tool (two children) and waits to be SIGKILLed. It prints
// `spares <pid>,<pid>` once they are loaded (each logs its pid to $LOOM_ISOLATE_SPAWN_LOG).
import { readFileSync } from 'node:fs';
import { defineTool } from '../../src/index.js';

const tool = defineTool({
  name: 'warm_orphan',
  description: 'runs in a child process',
  input: { type: 'object' },
  sideEffect: 'read_only',
  isolate: {
    module: new URL('./isolate-tool-module.ts', import.meta.url),
    execArgv: ['--import', 'tsx'],
    warm: 2,
  },
});
await tool.isolate?.warm();
const pids = readFileSync(process.env.LOOM_ISOLATE_SPAWN_LOG as string, 'utf8')
  .split('\n')
  .filter(Boolean);
console.log(`spares ${pids.join(',')}`);
// Held open until the test kills this process (the spares do not hold the event loop).
setInterval(() => {}, 60_000);
