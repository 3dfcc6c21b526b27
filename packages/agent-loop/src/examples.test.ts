import { join } from 'node:path';
import { spawnTestProcess } from '@loom/event-runtime/testing';
import { expect, it } from 'vitest';

const directory = join(import.meta.dirname, '../examples');

// The README and docs/agents.md show this file: it must run (on the built package) and print what they say.
// Each waits on its example's process to exit (spawnTestProcess's own deadline names it), within
// the package's 60 s test timeout.
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
});

// The README's streaming section shows this file: a web server that does not drive the run
// streams it as the AI SDK's UI message stream.
it('example stream-to-browser.ts streams a run another runtime drives, as a UI message stream', async () => {
  const { stdout } = await spawnTestProcess(join(directory, 'stream-to-browser.ts'), {
    cwd: directory,
  }).succeeded();
  expect(stdout).toContain('protocol: v1');
  expect(stdout).toContain(
    'chunks: start start-step text-start text-delta text-end finish-step data-loom-output finish',
  );
  expect(stdout).toContain('text: Your order A-17 ships tomorrow morning.');
  expect(stdout).toContain('result: goal_completed');
});

// The README and docs/agents.md show this one too (Conversations).
it('example chat-thread.ts answers three messages of a thread in order, each knowing the earlier ones', async () => {
  const { stdout } = await spawnTestProcess(join(directory, 'chat-thread.ts'), {
    cwd: directory,
  }).succeeded();
  expect(stdout).toContain('reply 1: Hello Ana! How can I help?');
  expect(stdout).toContain('turn 2 called lookup_order');
  expect(stdout).toContain('reply 2: A-17 has shipped; it arrives Friday.');
  expect(stdout).toContain(
    'reply 3: You asked 2 things before this; A-17 still arrives Friday. (run chat-ana/3)',
  );
  expect(stdout).toContain(
    [
      '  1 user: Hi, I am Ana.',
      '  1 assistant: Hello Ana! How can I help?',
      '  2 user: Where is my order A-17?',
      '  2 assistant: (calls a tool)',
      '  2 tool: {"id":"A-17","status":"shipped","eta":"Friday"}',
      '  2 assistant: A-17 has shipped; it arrives Friday.',
      '  3 user: And when does it arrive?',
      '  3 assistant: You asked 2 things before this; A-17 still arrives Friday.',
    ].join('\n'),
  );
});
