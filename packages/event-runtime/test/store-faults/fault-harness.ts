// Runs the fault worker and hands the test its stdout lines as they come.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const worker = join(import.meta.dirname, 'fault-worker.ts');

/** What the worker printed at the end. */
export interface FaultResult {
  execs: number;
  settled: number;
  failed: number;
  timedOut: boolean;
  stillRunning: number;
  errors: string[];
  /** Up to 5 executions whose handle never settled: driven here?, their events. */
  stranded: Array<{ id: string; driving: boolean; events: string[] }>;
}

export interface FaultRun {
  child: ChildProcess;
  /** True once the worker exited. */
  exited(): boolean;
  /** Resolves when the worker printed `line` (rejects if it exits first). */
  printed(line: string): Promise<void>;
  /** Exit code and the parsed result line (undefined if it never printed one). */
  exit: Promise<{ code: number | null; result: FaultResult | undefined; output: string }>;
}

/** The worker's own settle deadline is 25 s: past this it is stuck, and is killed. */
const workerDeadlineMs = 50_000;

export function runFaultWorker(env: Record<string, string>): FaultRun {
  const child = spawn(process.execPath, ['--import', 'tsx', worker], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = false;
  const watchers: Array<{ line: string; resolve: () => void; reject: (e: Error) => void }> = [];
  const check = () => {
    for (const watcher of [...watchers]) {
      if (output.includes(`${watcher.line}\n`)) {
        watchers.splice(watchers.indexOf(watcher), 1);
        watcher.resolve();
      }
    }
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    check();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exit = new Promise<{
    code: number | null;
    result: FaultResult | undefined;
    output: string;
  }>((resolve) =>
    child.on('exit', (code) => {
      for (const watcher of watchers.splice(0)) {
        watcher.reject(
          new Error(`the worker exited (${code}) before printing ${watcher.line}:\n${output}`),
        );
      }
      const line = output.split('\n').find((candidate) => candidate.startsWith('result '));
      resolve({
        code,
        result: line === undefined ? undefined : (JSON.parse(line.slice(7)) as FaultResult),
        output,
      });
    }),
  );
  return {
    child,
    exit,
    exited: () => exited,
    printed: (line) =>
      new Promise<void>((resolve, reject) => {
        watchers.push({ line, resolve, reject });
        check();
      }),
  };
}
