// The one child-process harness of the process tests: spawn a script (or any command), collect
// its stdout and stderr, await its whole lines with deadlines, SIGKILL it and await its exit.
// Every wait fails naming what it waited for, with the output so far; a process alive at its
// deadline is SIGKILLed; `killTestProcesses` (in an afterEach/afterAll) and this process's exit
// take down whatever a failing test left running.
import { type ChildProcess, spawn } from 'node:child_process';
import { basename, resolve } from 'node:path';
import { testScriptArgs } from './test-script-bundle.js';

/** Longest a spawned process lives unless told otherwise: the tests' 60 s cap. */
export const testProcessDeadlineMs = 60_000;
/** Longest one wait (a line, a fact, a condition) lasts unless told otherwise. */
export const testProcessWaitMs = 30_000;
/** Longest `kill` waits for a SIGKILLed process to close its pipes before it gives up. */
const killWaitMs = 10_000;
/** Output quoted in an error is cut to its last this many characters. */
const quotedOutputCharsMax = 20_000;

/** How a process ended: its exit code, or the signal that ended it. */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** How a process ended and everything it printed. */
export interface ProcessEnd extends ProcessExit {
  stdout: string;
  stderr: string;
  /** stdout and stderr, interleaved as they arrived. */
  output: string;
}

/** Options of {@link spawnTestProcess} and {@link spawnTestCommand}. */
export interface TestProcessOptions {
  /** Arguments after the script (or the command). */
  args?: readonly string[];
  /** Added to the environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  /** Start from this process's environment (the default), or from nothing but `env`. */
  inheritEnv?: boolean;
  cwd?: string;
  /** Pipe stdin (write to `child.stdin`); otherwise it is ignored. */
  stdin?: boolean;
  /**
   * Node's flags before the script. Unless given, a TypeScript script runs as its esbuild bundle
   * (built once into its package's `.test-scripts` folder, see test-script-bundle.ts), or under
   * `--import tsx` where esbuild is not installed or LOOM_TEST_SCRIPTS=tsx.
   */
  nodeArgs?: readonly string[];
  /** What errors call it; the script's file name unless given. */
  name?: string;
  /** The process is SIGKILLed if still alive this long after its start. */
  deadlineMs?: number;
  /** The default deadline of each wait on it. */
  waitMs?: number;
}

/** A spawned child process of a test: see {@link spawnTestProcess}. */
export interface TestProcess {
  readonly child: ChildProcess;
  readonly name: string;
  /** Everything printed so far (stdout and stderr, interleaved). */
  output(): string;
  stdout(): string;
  stderr(): string;
  /** The whole stdout lines so far (the last, unfinished piece is left out). */
  lines(): string[];
  /** The whole stdout lines so far parsed as JSON; throws naming a line that is not JSON. */
  facts(): Array<Record<string, unknown>>;
  /** The first whole stdout line starting with `prefix` (or matching a RegExp). */
  line(prefix: string | RegExp, timeoutMs?: number): Promise<string>;
  /** The first whole stdout line's match of `pattern`, named `what` in errors. */
  match(pattern: RegExp, what?: string, timeoutMs?: number): Promise<RegExpExecArray>;
  /** The first JSON stdout line whose `fact` is `name`. */
  fact(name: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves once `check` holds (tried at each output and at the exit); names `what` if not. */
  waitFor<T>(check: () => T | undefined | false, what: string, timeoutMs?: number): Promise<T>;
  /** Settles at 'close', after the last output: how it ended. Never rejects. */
  exit: Promise<ProcessExit>;
  /** True once it exited or failed to start. */
  exited(): boolean;
  /** Its exit and output, within `timeoutMs`; at the deadline it is SIGKILLed and this rejects. */
  ended(timeoutMs?: number): Promise<ProcessEnd>;
  /** Like {@link TestProcess.ended}, and rejects (with the output) unless it exited with code 0. */
  succeeded(timeoutMs?: number): Promise<ProcessEnd>;
  /** Sends `signal` (SIGKILL unless given) if it is alive, and awaits its exit (bounded). */
  kill(signal?: NodeJS.Signals): Promise<ProcessExit>;
}

/**
 * The processes still running, one set per test process: vitest may load this module once per
 * test file, and one file's cleanup must also reach what an earlier file left behind.
 */
const liveKey = Symbol.for('@loom/event-runtime/testing:live-test-processes');
const holder = globalThis as typeof globalThis & { [liveKey]?: Set<TestProcess> };

function liveProcesses(): Set<TestProcess> {
  let live = holder[liveKey];
  if (live === undefined) {
    live = new Set();
    holder[liveKey] = live;
    // The last guard against orphans: a test process that ends (or crashes) takes its children.
    process.once('exit', () => {
      for (const running of live ?? []) running.child.kill('SIGKILL');
    });
  }
  return live;
}

/** SIGKILLs every process this harness started that still runs, and awaits their exits. */
export async function killTestProcesses(): Promise<void> {
  await Promise.all([...liveProcesses()].map((running) => running.kill('SIGKILL')));
}

/**
 * Spawns `node <file> [args]` as a test's child process; a TypeScript `file` runs as its bundle
 * (or under tsx: see {@link TestProcessOptions.nodeArgs}).
 *
 * @example
 * ```ts
 * const worker = spawnTestProcess(join(import.meta.dirname, 'crash-worker.ts'), {
 *   env: { LOOM_CRASH_DB: path },
 * });
 * afterAll(killTestProcesses);
 * const node = await worker.line('ready ');
 * const { code } = await worker.kill();
 * ```
 */
export function spawnTestProcess(file: string, options: TestProcessOptions = {}): TestProcess {
  const script =
    options.nodeArgs === undefined
      ? testScriptArgs(resolve(options.cwd ?? process.cwd(), file))
      : [...options.nodeArgs, file];
  return spawnTestCommand(process.execPath, {
    ...options,
    name: options.name ?? basename(file),
    args: [...script, ...(options.args ?? [])],
  });
}

/** Spawns any `command` (`args` given in full) as a test's child process, like {@link spawnTestProcess}. */
export function spawnTestCommand(command: string, options: TestProcessOptions = {}): TestProcess {
  const name = options.name ?? basename(command);
  const deadlineMs = options.deadlineMs ?? testProcessDeadlineMs;
  const waitMs = options.waitMs ?? testProcessWaitMs;
  const env: Record<string, string | undefined> = {
    ...(options.inheritEnv === false ? {} : process.env),
    ...options.env,
  };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete env[key];
  const child = spawn(command, [...(options.args ?? [])], {
    env,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    stdio: [options.stdin === true ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let output = '';
  let closed: ProcessExit | undefined;
  let killedAtDeadline = false;
  const watchers = new Set<() => void>();
  const notify = () => {
    for (const watcher of [...watchers]) watcher();
  };
  const label = () => `${name} (pid ${child.pid ?? 'none'})`;
  const quoted = () => {
    const cut = output.length - quotedOutputCharsMax;
    const text = cut > 0 ? `…(${cut} earlier characters)\n${output.slice(cut)}` : output;
    return text === '' ? 'output so far: (nothing)' : `output so far:\n${text}`;
  };
  const ending = (exit: ProcessExit) =>
    killedAtDeadline
      ? `SIGKILLed at its ${deadlineMs} ms deadline`
      : `${exit.code !== null ? `code ${exit.code}` : exit.signal}`;
  const wholeLines = () => stdout.split('\n').slice(0, -1);

  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    output += chunk.toString();
    notify();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    output += chunk.toString();
    notify();
  });
  const deadline = setTimeout(() => {
    if (closed !== undefined || child.exitCode !== null || child.signalCode !== null) return;
    killedAtDeadline = true;
    child.kill('SIGKILL');
  }, deadlineMs);
  // Not what keeps a test process alive: if it ends first, its exit hook kills the child.
  deadline.unref();
  // 'close' comes after the last output: the watchers see every line before they give up.
  const exit = new Promise<ProcessExit>((resolve) => {
    const finish = (ended: ProcessExit) => {
      if (closed !== undefined) return;
      closed = ended;
      clearTimeout(deadline);
      liveProcesses().delete(created);
      notify();
      resolve(ended);
    };
    child.on('close', (code, signal) => finish({ code, signal }));
    child.on('error', (error) => {
      output += `\n[${name} failed to spawn: ${error.message}]\n`;
      if (child.pid === undefined) finish({ code: null, signal: null });
    });
  });

  const waitFor = <T>(
    check: () => T | undefined | false,
    what: string,
    timeoutMs = waitMs,
  ): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        watchers.delete(watcher);
        reject(
          new Error(`${label()}: timed out after ${timeoutMs} ms waiting for ${what}; ${quoted()}`),
        );
      }, timeoutMs);
      const watcher = () => {
        let found: T | undefined | false;
        try {
          found = check();
        } catch (error) {
          watchers.delete(watcher);
          clearTimeout(timer);
          reject(error);
          return;
        }
        if (found !== undefined && found !== false) {
          watchers.delete(watcher);
          clearTimeout(timer);
          resolve(found);
        } else if (closed !== undefined) {
          watchers.delete(watcher);
          clearTimeout(timer);
          reject(new Error(`${label()} exited (${ending(closed)}) before ${what}; ${quoted()}`));
        }
      };
      watchers.add(watcher);
      watcher();
    });

  const factOf = (line: string) => {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw new Error(`${label()} printed a line that is not JSON: ${line}; ${quoted()}`);
    }
  };
  const facts = () => wholeLines().map(factOf);

  const created: TestProcess = {
    child,
    name,
    output: () => output,
    stdout: () => stdout,
    stderr: () => stderr,
    lines: wholeLines,
    facts,
    waitFor,
    exit,
    exited: () => closed !== undefined || child.exitCode !== null || child.signalCode !== null,
    line: (prefix, timeoutMs) =>
      waitFor(
        () =>
          wholeLines().find((line) =>
            typeof prefix === 'string' ? line.startsWith(prefix) : prefix.test(line),
          ),
        `printing '${prefix}'`,
        timeoutMs,
      ),
    match: (pattern, what = `a line matching ${pattern}`, timeoutMs) =>
      waitFor(
        () => {
          for (const line of wholeLines()) {
            const found = pattern.exec(line);
            if (found !== null) return found;
          }
          return undefined;
        },
        what,
        timeoutMs,
      ),
    fact: (factName, timeoutMs) =>
      waitFor(
        () => {
          // In order, up to the fact: what the process printed after it is not this wait's.
          for (const line of wholeLines()) {
            const candidate = factOf(line);
            if (candidate.fact === factName) return candidate;
          }
          return undefined;
        },
        `the fact '${factName}'`,
        timeoutMs,
      ),
    ended: async (timeoutMs = deadlineMs) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), timeoutMs);
      });
      const first = await Promise.race([exit, late]);
      clearTimeout(timer);
      if (first === 'late') {
        await created.kill('SIGKILL');
        throw new Error(`${label()} still ran after ${timeoutMs} ms (SIGKILLed); ${quoted()}`);
      }
      return { ...first, stdout, stderr, output };
    },
    succeeded: async (timeoutMs) => {
      const end = await created.ended(timeoutMs);
      if (end.code !== 0)
        throw new Error(`${label()} exited (${ending(end)}), not with code 0; ${quoted()}`);
      return end;
    },
    kill: async (signal = 'SIGKILL') => {
      if (closed !== undefined) return closed;
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      let timer: NodeJS.Timeout | undefined;
      const stuck = new Promise<'stuck'>((resolve) => {
        timer = setTimeout(() => resolve('stuck'), killWaitMs);
      });
      const first = await Promise.race([exit, stuck]);
      clearTimeout(timer);
      if (first === 'stuck')
        throw new Error(`${label()} did not exit ${killWaitMs} ms after ${signal}; ${quoted()}`);
      return first;
    },
  };
  liveProcesses().add(created);
  return created;
}
