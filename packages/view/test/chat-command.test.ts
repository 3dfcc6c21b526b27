// `loom chat --flows <module>`: a thread agent's useChat endpoint, as the built binary on a SQLite
// file; its refusals (before it listens) from the CLI in process. (A turn through it, streamed
// from a `loom worker`, is agent-loop's new-user trial test.)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '@loom/event-runtime/sqlite';
import { killTestProcesses, spawnTestProcess } from '@loom/event-runtime/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { loomInProcess } from './fixture.js';

const dir = mkdtempSync(join(tmpdir(), 'loom-view-chat-'));
const db = `sqlite:${join(dir, 'loom.db')}`;
const agentsModule = join(import.meta.dirname, 'worker', 'agents.mjs');
const flowsModule = join(import.meta.dirname, 'worker', 'flows.mjs');
const bin = new URL('../dist/bin.js', import.meta.url).pathname;

afterAll(async () => {
  await killTestProcesses();
  rmSync(dir, { recursive: true, force: true });
});

describe('loom chat', () => {
  it('serves the module’s agent: a bad request is a 400 naming the problem, and a resume before the thread exists is 204', async () => {
    const backend = await openSqlite({ path: join(dir, 'loom.db'), migrate: true });
    await backend.close();
    const chat = spawnTestProcess(bin, {
      args: ['--db', db, 'chat', '--flows', agentsModule, '--port', '0'],
      nodeArgs: [],
      name: 'loom chat',
    });
    try {
      const line = await chat.match(
        /^loom: chat with (\S+) on (http:\S+) /,
        'loom chat to listen',
        30_000,
      );
      const ready = { agent: line[1], url: line[2] as string };
      expect(ready.agent).toBe('refunder');
      expect(ready.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/chat$/);
      const bad = await fetch(ready.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [] }),
      });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: { message: string } }).error.message).toContain('id');
      const none = await fetch(`${ready.url}/nobody/stream`);
      expect(none.status).toBe(204);
    } finally {
      chat.child.kill('SIGTERM');
      expect((await chat.ended(30_000)).code).toBe(0);
    }
  });

  it('refuses a module without an agent and a bad port (exit 2), naming what is wrong', async () => {
    const noAgent = await loomInProcess(
      ['--db', db, 'chat', '--flows', flowsModule, '--port', '0'],
      {},
    );
    expect(noAgent.code).toBe(2);
    expect(noAgent.stderr).toContain('exports no agent');
    const badPort = await loomInProcess(
      ['--db', db, 'chat', '--flows', agentsModule, '--port', 'x'],
      {},
    );
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toContain('--port');
    const unknown = await loomInProcess(
      ['--db', db, 'chat', '--flows', agentsModule, '--agent', 'nobody', '--port', '0'],
      {},
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("--agent 'nobody'");
  });
});
