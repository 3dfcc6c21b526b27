#!/usr/bin/env node
import { createInterface } from 'node:readline/promises';
import { runCli } from './run-cli.js';

/** A yes/no question on the terminal (stdin and stderr): only "y" or "yes" is a yes. */
async function confirm(question: string): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await prompt.question(question)).trim());
  } finally {
    prompt.close();
  }
}

/** Period of the idle timer that keeps `loom tail` alive (it does nothing when it fires). */
const keepAliveIntervalMs = 60_000;

const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(text.startsWith('\r') ? text : `${text}\n`),
  env: process.env,
  isTty: process.stderr.isTTY === true,
  color: process.stdout.isTTY === true && (process.env.NO_COLOR ?? '') === '',
  ...(process.stdin.isTTY === true && process.stderr.isTTY === true ? { confirm } : {}),

  keepAlive: () => {
    // The process's own handle on the event loop while `loom tail` follows a run.
    const handle = setInterval(() => {}, keepAliveIntervalMs);
    return () => clearInterval(handle);
  },
});

/** Resolves once everything written to `stream` so far has been handed to the OS. */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => stream.write('', () => resolve()));
}

// Every command has finished its work when runCli returns (a long-running one, such as `serve`,
// `tail` or `worker`, only returns once it stops). A module the command loaded (`--flows`) may
// leave a handle open (a timer, a pool): exit with the command's code all the same, once the
// output is out, instead of waiting for the user's handles.
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(code);
