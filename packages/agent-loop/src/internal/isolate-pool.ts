import { type ChildProcess, fork } from 'node:child_process';
import { AgentErrorCode, LoomError } from '../errors.js';
import type { ChildMessage, ParentMessage } from './isolate-protocol.js';

/** How long `close()` waits for a SIGKILLed child to be reaped: 5 s (it takes milliseconds). */
const exitWaitMs = 5_000;

/**
 * The child runner next to this file: `isolate-child.js` in the built package; `.ts` when the
 * package runs from source (its tests), where the child needs a TypeScript loader in `execArgv`.
 */
const runnerPath = new URL(
  import.meta.url.endsWith('.ts') ? './isolate-child.ts' : './isolate-child.js',
  import.meta.url,
);

export interface IsolateSettings {
  readonly tool: string;
  /** The module's file URL. */
  readonly module: string;
  /** Children kept spawned and loaded, ready for a call. */
  readonly warm: number;
  readonly execArgv: readonly string[];
}

export type IsolatedCallContext = ParentMessage['context'];

/** One child process, for one call. */
class IsolateChild {
  readonly process: ChildProcess;
  /** Settles when the process is gone (never rejects). */
  readonly exited: Promise<void>;
  /** The module is loaded: resolves on `ready`; rejects with a typed error. */
  readonly loaded: Promise<void>;
  private gone = false;
  /** Why the process is gone, once it is. */
  private crash: LoomError | undefined;
  private onMessage: (message: ChildMessage) => void = () => {};
  private onExit: (error: LoomError) => void = () => {};

  constructor(private readonly settings: IsolateSettings) {
    const child = fork(runnerPath, [settings.module], {
      execArgv: [...settings.execArgv],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'json',
    });
    this.process = child;
    let loadedResolve: () => void = () => {};
    let loadedReject: (error: LoomError) => void = () => {};
    this.loaded = new Promise<void>((resolve, reject) => {
      loadedResolve = resolve;
      loadedReject = reject;
    });
    this.loaded.catch(() => undefined); // a spare never called may fail to load unobserved
    let isReady = false;
    this.exited = new Promise<void>((resolve) => {
      const done = (code: number | null, signal: NodeJS.Signals | null, cause?: Error) => {
        if (this.gone) return;
        this.gone = true;
        const error = this.crashed(code, signal, cause);
        this.crash = error;
        if (!isReady) loadedReject(error);
        this.onExit(error);
        resolve();
      };
      child.on('exit', (code, signal) => done(code, signal));
      child.on('error', (cause) => {
        // Spawn failed (or the channel broke): make sure nothing is left, then report it.
        child.kill('SIGKILL');
        done(null, null, cause);
      });
    });
    child.on('message', (message: ChildMessage) => {
      if (message?.type === 'ready') {
        isReady = true;
        loadedResolve();
      } else if (message?.type === 'load_failed') {
        loadedReject(
          new LoomError(
            AgentErrorCode.TOOL_ISOLATE_MODULE_INVALID,
            `tool '${settings.tool}': ${message.message}`,
            { tool: settings.tool, module: settings.module },
          ),
        );
        this.kill();
      } else {
        this.onMessage(message);
      }
    });
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  get alive(): boolean {
    return !this.gone;
  }

  /** Spares do not keep the parent's event loop alive. */
  hold(held: boolean): void {
    const channel = this.process.channel as { ref(): void; unref(): void } | null | undefined;
    if (held) {
      this.process.ref();
      channel?.ref();
    } else {
      this.process.unref();
      channel?.unref();
    }
  }

  /** Runs the one call of this child; `signal` (timeout, cancel, shutdown) kills it. */
  async call(input: unknown, context: IsolatedCallContext, signal: AbortSignal): Promise<unknown> {
    signal.throwIfAborted();
    const aborted = new Promise<never>((_, reject) => {
      const onAbort = () => {
        this.kill();
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      void this.exited.then(() => signal.removeEventListener('abort', onAbort));
    });
    aborted.catch(() => undefined);
    const answered = new Promise<unknown>((resolve, reject) => {
      if (this.crash !== undefined) reject(this.crash);
      this.onExit = reject;
      this.onMessage = (message) => {
        if (message.type === 'result') resolve(message.output);
        else if (message.type === 'error') reject(rebuilt(message.error));
      };
    });
    answered.catch(() => undefined); // a load failure or an abort answers first
    await Promise.race([this.loaded, aborted]);
    const message: ParentMessage = { type: 'run', input, context };
    // A closed channel: the child is dying, and its exit answers the call as a crash.
    this.process.send(message, (error) => {
      if (error !== null) void this.kill();
    });
    return Promise.race([answered, aborted]);
  }

  kill(): Promise<void> {
    if (!this.gone) this.process.kill('SIGKILL');
    return this.exited;
  }

  private crashed(
    exitCode: number | null,
    signal: NodeJS.Signals | null,
    cause: Error | undefined,
  ): LoomError {
    const how =
      cause !== undefined
        ? `could not run: ${cause.message}`
        : signal !== null
          ? `was killed by ${signal}`
          : `exited with code ${exitCode}`;
    return new LoomError(
      AgentErrorCode.TOOL_ISOLATE_CRASHED,
      `tool '${this.settings.tool}': its child process (pid ${this.pid}) ${how} before it answered`,
      { tool: this.settings.tool, pid: this.pid ?? null, exitCode, signal },
      cause,
    );
  }
}

/** The error the tool's `run` threw in the child, as an Error here (so its code is recorded). */
function rebuilt(error: { name: string; message: string; code?: string; stack?: string }): Error {
  const out = new Error(error.message) as Error & { code?: string };
  out.name = error.name;
  if (error.code !== undefined) out.code = error.code;
  if (error.stack !== undefined) out.stack = error.stack;
  return out;
}

/**
 * The child processes of one isolated tool. Every call runs in a fresh child, killed once it
 * answered; with `warm` > 0, that many are kept spawned and loaded, so a call takes one and a
 * replacement is spawned behind it.
 */
export class IsolatePool {
  private readonly spares: IsolateChild[] = [];
  private readonly busy = new Set<IsolateChild>();
  /** Bumped by `close()`: a replacement planned before it is not spawned after it. */
  private epoch = 0;

  constructor(private readonly settings: IsolateSettings) {}

  /** Spawns spares up to `warm` and waits until their module is loaded. */
  async warm(): Promise<void> {
    this.dropDead();
    while (this.spares.length < this.settings.warm) this.spares.push(this.spare());
    await Promise.all(this.spares.map((child) => child.loaded));
  }

  async call(input: unknown, context: IsolatedCallContext, signal: AbortSignal): Promise<unknown> {
    this.dropDead();
    const taken = this.spares.shift();
    const child = taken ?? new IsolateChild(this.settings);
    child.hold(true);
    this.busy.add(child);
    // The replacement is forked after this call is sent: fork() blocks this thread for a while.
    if (this.settings.warm > 0) {
      const epoch = this.epoch;
      setImmediate(() => {
        if (epoch === this.epoch) this.refill();
      });
    }
    try {
      return await child.call(input, context, signal);
    } finally {
      // Not awaited: the answer does not wait for the process to be reaped (close() does).
      void child.kill().then(() => this.busy.delete(child));
    }
  }

  /** Kills every child of this tool (spares and calls in flight) and waits until they are gone. */
  async close(): Promise<void> {
    this.epoch += 1;
    const all = [...this.spares.splice(0), ...this.busy];
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, exitWaitMs).unref());
    await Promise.race([Promise.all(all.map((child) => child.kill())), deadline]);
  }

  private spare(): IsolateChild {
    const child = new IsolateChild(this.settings);
    // Held while it loads (a process awaiting warm() must not exit under it), then let go: an
    // idle spare does not keep this process alive.
    void child.loaded.then(
      () => {
        if (this.spares.includes(child)) child.hold(false);
      },
      () => undefined,
    );
    return child;
  }

  private refill(): void {
    this.dropDead();
    while (this.spares.length < this.settings.warm) {
      this.spares.push(this.spare());
    }
  }

  private dropDead(): void {
    for (let i = this.spares.length - 1; i >= 0; i--) {
      if (!this.spares[i]?.alive) this.spares.splice(i, 1);
    }
  }
}
