// `loom worker` as a real child process: the built binary, its output collected, its lines
// awaited as they come (the pattern of @loom/event-runtime's test/support/worker-process.ts, for
// the bin instead of a tsx script). Shared by the worker tests, the kill campaign and the
// workers benchmark.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const loomBin = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));
export const workerFlows = fileURLToPath(new URL('./flows.mjs', import.meta.url));

export interface LoomWorker {
  child: ChildProcess;
  /** Everything printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the first stdout line that starts with `prefix` (rejects if it exits first). */
  line(prefix: string): Promise<string>;
  /** The node id from the `ready` line. */
  ready: Promise<string>;
  /** Exit code, or the signal that ended it. */
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited(): boolean;
}

/** Spawns `node bin.js worker <args>` with `env` added to this process's environment. */
export function spawnLoomWorker(args: readonly string[], env: Record<string, string>): LoomWorker {
  if (!existsSync(loomBin)) throw new Error(`${loomBin} is missing: run pnpm build first`);
  const child = spawn(process.execPath, [loomBin, 'worker', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
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
      // Only whole lines: the last piece may still be growing.
      const found = stdout
        .split('\n')
        .find((line, index, lines) => index < lines.length - 1 && line.startsWith(watcher.prefix));
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
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => {
      exited = true;
      check();
      for (const watcher of watchers.splice(0)) {
        watcher.reject(
          new Error(
            `loom worker exited (${code ?? signal}) before '${watcher.prefix}':\n${output}`,
          ),
        );
      }
      resolve({ code, signal });
    }),
  );
  const line = (prefix: string) =>
    new Promise<string>((resolve, reject) => {
      watchers.push({ prefix, resolve, reject });
      check();
    });
  const ready = line('loom: worker ').then((text) => text.split(' ')[2] as string);
  // A worker that fails to boot rejects `ready`; callers that never await it must not crash.
  ready.catch(() => undefined);
  return { child, exit, output: () => output, exited: () => exited, line, ready };
}

/** The numbers of a `drained` line (`--json` off). */
export function parseDrained(line: string): {
  inFlight: number;
  finished: number;
  handedBack: number;
  queueItemsHandedBack: number;
} {
  const match =
    /drained: (\d+) in flight, (\d+) finished, (\d+) handed back, (\d+) queue items handed back/.exec(
      line,
    );
  if (match === null) throw new Error(`not a drained line: ${line}`);
  const [, inFlight, finished, handedBack, queueItemsHandedBack] = match.map(Number) as number[];
  return {
    inFlight: inFlight as number,
    finished: finished as number,
    handedBack: handedBack as number,
    queueItemsHandedBack: queueItemsHandedBack as number,
  };
}
