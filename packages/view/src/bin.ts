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

process.exitCode = await runCli(process.argv.slice(2), {
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
