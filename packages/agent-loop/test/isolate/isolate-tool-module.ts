// The module of the isolated tools in the tests: loaded in a child process by the tool's pool.
// At load it appends its pid to $LOOM_ISOLATE_SPAWN_LOG (when set), so a test counts spawns.
import { appendFileSync, writeFileSync } from 'node:fs';
import type { IsolatedToolContext } from '../../src/index.js';

const spawnLog = process.env.LOOM_ISOLATE_SPAWN_LOG;
if (spawnLog !== undefined && spawnLog !== '') appendFileSync(spawnLog, `${process.pid}\n`);

export interface ModuleInput {
  mode: 'echo' | 'exit' | 'sigkill' | 'uncaught' | 'reject' | 'hang';
  value?: string;
  /** Written with the child's pid before the mode acts. */
  pidFile?: string;
}

export async function run(input: ModuleInput, context: IsolatedToolContext): Promise<unknown> {
  if (input.pidFile !== undefined) writeFileSync(input.pidFile, String(process.pid));
  switch (input.mode) {
    case 'echo':
      return { pid: process.pid, value: input.value ?? null, context: { ...context } };
    case 'exit':
      process.exit(3);
      break;
    case 'sigkill':
      process.kill(process.pid, 'SIGKILL');
      break;
    case 'uncaught':
      setTimeout(() => {
        throw new Error('thrown where nothing catches it');
      }, 0);
      break;
    case 'reject':
      throw Object.assign(new Error('the quota is spent'), { code: 'E_QUOTA' });
    case 'hang':
      break;
  }
  return new Promise(() => {});
}
