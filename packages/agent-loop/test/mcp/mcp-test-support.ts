// Starts the real MCP test server (mcp-test-server.ts) for the MCP tests: as a stdio child of a
// connected SDK Client, or as a streamable HTTP server in its own child process.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnTestProcess, type TestProcess, testScriptArgs } from '@loom/event-runtime/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const serverScript = join(import.meta.dirname, 'mcp-test-server.ts');
const startTimeoutMs = 30_000;

/** A client connected to a fresh stdio server; `serverPid` is the server's process. */
export async function stdioClient(
  env: Record<string, string>,
): Promise<{ client: Client; serverPid: number }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: testScriptArgs(serverScript),
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: 'inherit',
  });
  const client = new Client({ name: 'loom-test', version: '1.0.0' });
  await client.connect(transport);
  const pid = transport.pid;
  if (pid === null) throw new Error('the stdio transport has no server process');
  return { client, serverPid: pid };
}

/** A streamable HTTP server in its own child process, on 127.0.0.1 at a random port. */
export async function httpServer(
  env: Record<string, string>,
): Promise<{ url: URL; server: TestProcess }> {
  const server = spawnTestProcess(serverScript, {
    args: ['--http'],
    env,
    name: 'the HTTP MCP server',
  });
  const listening = await server
    .match(/listening (\d+)/, 'listening', startTimeoutMs)
    .catch(async (error: unknown) => {
      await server.kill();
      throw error;
    });
  return { url: new URL(`http://127.0.0.1:${Number(listening[1])}/mcp`), server };
}

/** A client connected to a streamable HTTP server. */
export async function httpClient(url: URL): Promise<Client> {
  const client = new Client({ name: 'loom-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

/** Kills a process and waits for its exit (bounded). */
export async function killAndWait(child: TestProcess | number): Promise<void> {
  if (typeof child === 'number') {
    process.kill(child, 'SIGKILL');
    return waitGone(child);
  }
  await child.kill();
}

async function waitGone(pid: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    if (Date.now() > deadline) throw new Error(`process ${pid} did not exit`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The lines of the side-channel file, `<tool> <idempotency key>` each. */
export function sideChannelLines(file: string): string[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '');
}
