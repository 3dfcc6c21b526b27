#!/usr/bin/env node
import { runCli } from './run-cli.js';

/** Period of the idle timer that keeps `loom tail` alive (it does nothing when it fires). */
const keepAliveIntervalMs = 60_000;

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(text.startsWith('\r') ? text : `${text}\n`),
  env: process.env,
  isTty: process.stderr.isTTY === true,
  color: process.stdout.isTTY === true && (process.env.NO_COLOR ?? '') === '',

  keepAlive: () => {
    // The process's own handle on the event loop while `loom tail` follows a run.
    const handle = setInterval(() => {}, keepAliveIntervalMs);
    return () => clearInterval(handle);
  },
});
