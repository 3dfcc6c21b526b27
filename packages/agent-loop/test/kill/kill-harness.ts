// Spawns lives of kill-worker.ts and reads what they did. Shared by the SQLite and Postgres
// kill matrices.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const worker = join(import.meta.dirname, 'kill-worker.ts');
const lifeTimeoutMs = 25_000;

export interface Life {
  /** 'SIGKILL' when the worker killed itself, else null. */
  signal: NodeJS.Signals | null;
  code: number | null;
  /** `result` or `approval`, with its JSON. */
  line: { kind: 'result' | 'approval'; value: Record<string, unknown> } | undefined;
  output: string;
}

/** Runs one life of the worker (kill-worker.ts unless `script`) to its end (exit or SIGKILL), within a deadline. */
export function life(env: Record<string, string>, script = worker): Promise<Life> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`a worker life took over ${lifeTimeoutMs} ms:\n${output}`));
    }, lifeTimeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const match = /^(result|approval) (.*)$/m.exec(output);
      resolve({
        code,
        signal,
        output,
        line:
          match === null
            ? undefined
            : { kind: match[1] as 'result' | 'approval', value: JSON.parse(match[2] as string) },
      });
    });
  });
}

/** How many times the tool was called: lines in the side-channel file. */
export function invocationsIn(file: string): number {
  if (!existsSync(file)) return 0;
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '').length;
}
