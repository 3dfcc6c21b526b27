import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const directory = join(import.meta.dirname, '../examples');

// The README shows this file: it must run (on the built package) and print what the README says.
it('example route-and-record.ts runs and prints the fallback it recorded', async () => {
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', join(directory, 'route-and-record.ts')],
    { cwd: directory },
  );
  expect(stdout).toContain("tool: 'search'");
  expect(stdout).toContain("input: { q: 'durable execution' }");
  expect(stdout).toMatch(/local \[ 'big: MODEL_UNAVAILABLE' \]/);
}, 30_000);
