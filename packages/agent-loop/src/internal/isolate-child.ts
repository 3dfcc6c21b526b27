// The entry of an isolated tool's child process (forked by `IsolatePool`). It loads the tool's
// module (argv[2], a file URL) at once, so a warm child answers its call without loading anything,
// says `ready`, runs exactly one call, answers, and waits to be killed by its parent. When the
// parent goes away (its IPC channel closes, even after a SIGKILL), it exits: no orphan outlives it.
import process from 'node:process';
import type { ChildMessage, ParentMessage } from './isolate-protocol.js';

type RunFunction = (input: unknown, context: unknown) => unknown;

function send(message: ChildMessage): void {
  // A parent that is gone cannot be told anything; 'disconnect' ends this process.
  process.send?.(message, undefined, undefined, () => undefined);
}

function describe(error: unknown): {
  name: string;
  message: string;
  code?: string;
  stack?: string;
} {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      message: error.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(typeof error.stack === 'string' ? { stack: error.stack } : {}),
    };
  }
  return { name: 'NonError', message: String(error) };
}

async function main(): Promise<void> {
  process.on('disconnect', () => process.exit(0));
  const moduleUrl = process.argv[2] ?? '';
  let run: RunFunction;
  try {
    const loaded = (await import(moduleUrl)) as { run?: unknown };
    if (typeof loaded.run !== 'function') {
      send({ type: 'load_failed', message: `${moduleUrl} exports no function named 'run'` });
      return;
    }
    run = loaded.run as RunFunction;
  } catch (error) {
    send({
      type: 'load_failed',
      message: `${moduleUrl} could not be loaded: ${describe(error).message}`,
    });
    return;
  }
  let called = false;
  process.on('message', (message: ParentMessage) => {
    if (message?.type !== 'run' || called) return;
    called = true;
    Promise.resolve()
      .then(() => run(message.input, message.context))
      .then(
        (output) => send({ type: 'result', output: output === undefined ? null : output }),
        (error: unknown) => send({ type: 'error', error: describe(error) }),
      );
  });
  send({ type: 'ready' });
}

void main();
