// A worker process for the crash tests: `node --import tsx <file>` with extra environment,
// its stdout and stderr collected, lines awaited as they come. Shared by the crash test, the
// kill -9 campaign and the crash-point enumeration.
import { type ChildProcess, spawn } from 'node:child_process';

export interface WorkerProcess {
  child: ChildProcess;
  /** Everything printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the first stdout line that starts with `prefix` (rejects if it exits first). */
  line(prefix: string): Promise<string>;
  /** Exit code, or the signal that ended it. */
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited(): boolean;
}

export function startWorker(
  file: string,
  env: Record<string, string>,
  options: { stdin?: boolean } = {},
): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    env: { ...process.env, ...env },
    stdio: [options.stdin === true ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let stdout = '';
  let exited = false;
  const watchers: Array<{
    prefix: string;
    resolve: (line: string) => void;
    reject: (e: Error) => void;
  }> = [];
  const check = () => {
    for (const watcher of [...watchers]) {
      const found = stdout.split('\n').find((line, index, lines) => {
        // Only whole lines: the last piece may still be growing.
        return index < lines.length - 1 && line.startsWith(watcher.prefix);
      });
      if (found !== undefined) {
        watchers.splice(watchers.indexOf(watcher), 1);
        watcher.resolve(found);
      }
    }
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    stdout += chunk.toString();
    check();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.on('exit', () => {
    exited = true;
  });
  // 'close' comes after the last output: the watchers see every line before they give up.
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => {
      exited = true;
      check();
      for (const watcher of watchers.splice(0)) {
        watcher.reject(
          new Error(
            `the worker exited (${code ?? signal}) before printing '${watcher.prefix}':\n${output}`,
          ),
        );
      }
      resolve({ code, signal });
    }),
  );
  return {
    child,
    exit,
    output: () => output,
    exited: () => exited,
    line: (prefix) =>
      new Promise<string>((resolve, reject) => {
        watchers.push({ prefix, resolve, reject });
        check();
      }),
  };
}
