// mcpTools against a real MCP server (test/mcp/mcp-test-server.ts), started by each test: as a
// stdio child process, and as a streamable HTTP server on 127.0.0.1 in its own child process.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  httpClient,
  httpServer,
  killAndWait,
  sideChannelLines,
  stdioClient,
} from '../../test/mcp/mcp-test-support.js';
import { harness, scripted, shown } from '../agent.test-support.js';
import { defineAgent, type Tool } from '../index.js';
import { McpErrorCode, mcpToolOutput, mcpTools, sideEffectOfAnnotations } from './index.js';

const dir = mkdtempSync(join(tmpdir(), 'loom-mcp-'));
let fileCount = 0;
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Connected {
  client: Client;
  sideChannel: string;
  /** Kills the server process (the client stays, now without a server). */
  killServer(): Promise<void>;
}

const transports: Record<'stdio' | 'streamable HTTP', () => Promise<Connected>> = {
  stdio: async () => {
    const sideChannel = join(dir, `side-${fileCount++}.log`);
    const { client, serverPid } = await stdioClient({ MCP_SIDE_CHANNEL: sideChannel });
    cleanups.push(() => client.close());
    return { client, sideChannel, killServer: () => killAndWait(serverPid) };
  },
  'streamable HTTP': async () => {
    const sideChannel = join(dir, `side-${fileCount++}.log`);
    const { url, server } = await httpServer({ MCP_SIDE_CHANNEL: sideChannel });
    cleanups.push(() => killAndWait(server));
    const client = await httpClient(url);
    cleanups.push(() => client.close());
    return { client, sideChannel, killServer: () => killAndWait(server) };
  },
};

function byName(tools: Tool[]): Record<string, Tool> {
  return Object.fromEntries(tools.map((tool) => [tool.name, tool]));
}

const allow = () => ({ kind: 'allow' as const });

describe.each(Object.entries(transports))('mcpTools over %s', (_transport, connect) => {
  it('lists the tools and maps their annotations to side-effect classes', async () => {
    const { client } = await connect();
    const tools = byName(await mcpTools(client));
    expect(Object.keys(tools).sort()).toEqual([
      'append_line',
      'read_note',
      'refuse',
      'set_flag',
      'wipe_journal',
    ]);
    expect(tools.read_note?.sideEffect).toBe('read_only');
    expect(tools.set_flag?.sideEffect).toBe('idempotent');
    expect(tools.append_line?.sideEffect).toBe('remote_mutation');
    expect(tools.wipe_journal?.sideEffect).toBe('destructive'); // destructive and idempotent
    expect(tools.refuse?.sideEffect).toBe('remote_mutation'); // no annotations
    expect(tools.read_note?.description).toBe('Read a note by id');
    // The server's JSON Schema is what the model sees and what validates arguments.
    expect(tools.read_note?.inputSchema).toMatchObject({
      type: 'object',
      properties: { id: { type: 'string' } },
      required: ['id'],
    });
    expect(await tools.read_note?.checkInput({ id: 'n1' })).toBeUndefined();
    expect(await tools.read_note?.checkInput({ id: 7 })).toMatch(/id/);
  });

  it('overrides a class, renames, prefixes and filters', async () => {
    const { client } = await connect();
    const tools = byName(
      await mcpTools(client, {
        overrides: {
          read_note: { sideEffect: 'remote_mutation' },
          append_line: { sideEffect: 'local_mutation', name: 'journal', timeoutMs: 5_000 },
        },
        exclude: ['wipe_journal'],
        prefix: 'notes_',
      }),
    );
    expect(Object.keys(tools).sort()).toEqual([
      'notes_journal',
      'notes_read_note',
      'notes_refuse',
      'notes_set_flag',
    ]);
    expect(tools.notes_read_note?.sideEffect).toBe('remote_mutation');
    expect(tools.notes_journal?.sideEffect).toBe('local_mutation');
    expect(tools.notes_journal?.timeoutMs).toBe(5_000);
    const only = await mcpTools(client, { include: ['set_flag'] });
    expect(only.map((tool) => tool.name)).toEqual(['set_flag']);
  });

  it('refuses a name the server does not have, and a bad override', async () => {
    const { client } = await connect();
    await expect(mcpTools(client, { include: ['read_notes'] })).rejects.toMatchObject({
      code: McpErrorCode.INVALID_ARGUMENT,
      fields: { path: 'include', actual: 'read_notes' },
    });
    await expect(
      mcpTools(client, { overrides: { append_lines: { sideEffect: 'read_only' } } }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(
      mcpTools(client, { overrides: { append_line: { sideEffect: 'risky' as never } } }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', fields: { mcpTool: 'append_line' } });
    await expect(
      mcpTools(client, { overrides: { append_line: { name: 'append.line' } } }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('an agent run calls MCP tools and the model gets their results', async () => {
    const { client, sideChannel } = await connect();
    const model = scripted(
      {
        toolCalls: [
          { tool: 'read_note', input: { id: 'n1' } },
          { tool: 'set_flag', input: { flag: 'urgent', value: true } },
        ],
      },
      { toolCalls: [{ tool: 'append_line', input: { text: 'milk bought' } }] },
      { text: 'done' },
    );
    const agent = defineAgent({
      name: 'notes',
      model,
      instructions: 'Use the notes tools.',
      tools: await mcpTools(client),
      policy: allow,
    });
    const { agents } = harness([agent]);
    const result = await agents.run(agent, 'go', { runId: 'mcp-run' });
    expect(result).toMatchObject({ reason: 'goal_completed', output: 'done', turns: 3 });
    // Text content becomes a string; structuredContent becomes the output as it is.
    expect(shown(model.requests[1])).toContain('note n1: buy milk');
    expect(shown(model.requests[1])).toMatch(/\\"flag\\":\\"urgent\\",\\"value\\":true/);
    expect(shown(model.requests[2])).toContain('appended: milk bought');
    // Each tool ran once, and got the call's idempotency key in `_meta`.
    expect(sideChannelLines(sideChannel).sort()).toEqual([
      'append_line mcp-run/2.0',
      'read_note mcp-run/1.0',
      'set_flag mcp-run/1.1',
    ]);
    expect(model.requests[0]?.tools?.map((t) => t.name)).toContain('append_line');
  });

  it('arguments that fail the server schema never reach the server', async () => {
    const { client, sideChannel } = await connect();
    const model = scripted(
      { toolCalls: [{ tool: 'read_note', input: { id: 7 } }] },
      { text: 'ok' },
    );
    const agent = defineAgent({
      name: 'notes',
      model,
      instructions: '',
      tools: await mcpTools(client),
      policy: allow,
    });
    const { agents } = harness([agent]);
    expect((await agents.run(agent, 'go')).reason).toBe('goal_completed');
    expect(shown(model.requests[1])).toMatch(/Invalid decision: the arguments of 'read_note'/);
    expect(sideChannelLines(sideChannel)).toEqual([]);
  });

  it('isError: true is a tool_error the model sees, with MCP_TOOL_ERROR', async () => {
    const { client } = await connect();
    const model = scripted(
      { toolCalls: [{ tool: 'refuse', input: { why: 'no' } }] },
      { text: 'ok' },
    );
    const agent = defineAgent({
      name: 'notes',
      model,
      instructions: '',
      tools: await mcpTools(client),
      policy: allow,
    });
    const { agents } = harness([agent]);
    expect((await agents.run(agent, 'go')).reason).toBe('goal_completed');
    expect(shown(model.requests[1])).toContain('MCP_TOOL_ERROR: refused: no');
  });

  it('a dead server is a typed tool error, not a crash: the run goes on', async () => {
    const { client, killServer } = await connect();
    const tools = await mcpTools(client);
    await killServer();
    const readNote = byName(tools).read_note;
    await expect(
      readNote?.run(
        { id: 'n1' },
        {
          runId: 'r',
          turn: 1,
          callId: 'c',
          idempotencyKey: 'r/1.0',
          signal: new AbortController().signal,
        },
      ),
    ).rejects.toMatchObject({ name: 'LoomError', code: McpErrorCode.MCP_UNAVAILABLE });
    const model = scripted(
      { toolCalls: [{ tool: 'read_note', input: { id: 'n1' } }] },
      { text: 'ok' },
    );
    const agent = defineAgent({ name: 'notes', model, instructions: '', tools, policy: allow });
    const { agents } = harness([agent]);
    expect((await agents.run(agent, 'go')).reason).toBe('goal_completed');
    expect(shown(model.requests[1])).toContain('MCP_UNAVAILABLE');
    await expect(mcpTools(client)).rejects.toMatchObject({
      code: McpErrorCode.MCP_UNAVAILABLE,
    });
  });
});

describe('the mapping, as pure functions', () => {
  it('annotations: readOnly first, destructive before idempotent, remote_mutation otherwise', () => {
    expect(sideEffectOfAnnotations({ readOnlyHint: true, destructiveHint: true })).toBe(
      'read_only',
    );
    expect(sideEffectOfAnnotations({ destructiveHint: true, idempotentHint: true })).toBe(
      'destructive',
    );
    expect(sideEffectOfAnnotations({ idempotentHint: true })).toBe('idempotent');
    expect(sideEffectOfAnnotations({ readOnlyHint: false, destructiveHint: false })).toBe(
      'remote_mutation',
    );
    expect(sideEffectOfAnnotations({ openWorldHint: false })).toBe('remote_mutation');
    expect(sideEffectOfAnnotations(undefined)).toBe('remote_mutation');
  });

  it('results: structured content, joined text, blocks as they are, null when empty', () => {
    expect(
      mcpToolOutput({ content: [{ type: 'text', text: '{}' }], structuredContent: { a: 1 } }),
    ).toEqual({ a: 1 });
    expect(
      mcpToolOutput({
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      }),
    ).toBe('a\nb');
    const image = { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' };
    expect(mcpToolOutput({ content: [{ type: 'text', text: 'see' }, image] })).toEqual([
      { type: 'text', text: 'see' },
      image,
    ]);
    expect(mcpToolOutput({ content: [] })).toBeNull();
  });
});

describe('McpErrorCode', () => {
  it('docs/errors.md lists every code, under its heading', () => {
    const docs = readFileSync(new URL('../../../../docs/errors.md', import.meta.url), 'utf8');
    const start = docs.indexOf('## `@loom/agent-loop/mcp`');
    expect(start).toBeGreaterThanOrEqual(0);
    const next = docs.indexOf('\n## ', start + 1);
    const section = docs.slice(start, next === -1 ? undefined : next);
    for (const code of Object.values(McpErrorCode)) expect(section).toContain(`| \`${code}\` |`);
  });
});
