import { join } from 'node:path';
import { spawnTestProcess } from '@loom/event-runtime/testing';
import { expect, it } from 'vitest';

const directory = join(import.meta.dirname, '../examples');

// The README shows this file: it must run (on the built package) and print what the README says.
it('example route-and-record.ts runs and prints the fallback it recorded', async () => {
  const { stdout } = await spawnTestProcess(join(directory, 'route-and-record.ts'), {
    cwd: directory,
  }).succeeded();
  expect(stdout).toContain("tool: 'search'");
  expect(stdout).toContain("input: { q: 'durable execution' }");
  expect(stdout).toMatch(/local \[ 'big: MODEL_UNAVAILABLE' \]/);
}, 30_000);
