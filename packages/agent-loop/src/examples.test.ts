import { join } from 'node:path';
import { spawnTestProcess } from '@loom/event-runtime/testing';
import { expect, it } from 'vitest';

const directory = join(import.meta.dirname, '../examples');

// The README and docs/agents.md show this file: it must run (on the built package) and print what they say.
it('example approve-refund.ts asks for approval, refunds once after it, and completes', async () => {
  const { stdout } = await spawnTestProcess(join(directory, 'approve-refund.ts'), {
    cwd: directory,
  }).succeeded();
  expect(stdout).toContain("approval asked: tool_call refund { id: 'A-17' }");
  expect(stdout).toContain(
    'result: goal_completed - Order A-17 was never delivered; I refunded it. (3 turns)',
  );
  expect(stdout).toContain("refunds made: [ 'A-17 (key ticket-981/2.0)' ]");
  expect(stdout).toContain('decided by: ana@example.com');
}, 60_000);

// The README's streaming section shows this file: a web server that does not drive the run
// streams it as the AI SDK's UI message stream.
it('example stream-to-browser.ts streams a run another runtime drives, as a UI message stream', async () => {
  const { stdout } = await spawnTestProcess(join(directory, 'stream-to-browser.ts'), {
    cwd: directory,
  }).succeeded();
  expect(stdout).toContain('protocol: v1');
  expect(stdout).toContain(
    'chunks: start start-step text-start text-delta text-end finish-step finish',
  );
  expect(stdout).toContain('text: Your order A-17 ships tomorrow morning.');
  expect(stdout).toContain('result: goal_completed');
}, 60_000);
