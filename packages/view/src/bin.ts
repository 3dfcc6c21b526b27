#!/usr/bin/env node
import { runCli } from './run-cli.js';

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(text.startsWith('\r') ? text : `${text}\n`),
  env: process.env,
  isTty: process.stderr.isTTY === true,
});
