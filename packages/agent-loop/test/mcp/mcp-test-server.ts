// A small, real MCP server for the MCP tests, built with the SDK's McpServer.
//   node --import tsx mcp-test-server.ts          serves on stdio (a child process of the client)
//   node --import tsx mcp-test-server.ts --http   serves streamable HTTP on 127.0.0.1, a random
//                                                 port, and prints `listening <port>`
// Its tools that do something append `<tool> <idempotency key>` to MCP_SIDE_CHANNEL, the file the
// tests count. With MCP_HANG_AFTER_EFFECT=<tool>, that tool appends its line, sends the log
// message `side effect done` and then never answers (the kill test dies on that message).
import { appendFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const env = process.env as Record<string, string | undefined>;
const sideChannel = env.MCP_SIDE_CHANNEL;
const hangAfterEffect = env.MCP_HANG_AFTER_EFFECT;

type Extra = {
  _meta?: Record<string, unknown> | undefined;
  signal: AbortSignal;
  sendNotification: (notification: {
    method: 'notifications/message';
    params: { level: 'info'; data: string };
  }) => Promise<void>;
};

async function effect(tool: string, extra: Extra): Promise<void> {
  if (sideChannel === undefined) throw new Error('MCP_SIDE_CHANNEL is not set');
  appendFileSync(sideChannel, `${tool} ${String(extra._meta?.['loom.dev/idempotency-key'])}\n`);
  if (hangAfterEffect === tool) {
    await extra.sendNotification({
      method: 'notifications/message',
      params: { level: 'info', data: 'side effect done' },
    });
    // Never answers: only the client going away (the agent process killed) ends this call.
    await new Promise((resolve) => extra.signal.addEventListener('abort', resolve));
  }
}

function testServer(): McpServer {
  const server = new McpServer(
    { name: 'loom-test-server', version: '1.0.0' },
    { capabilities: { logging: {} } },
  );
  server.registerTool(
    'read_note',
    {
      description: 'Read a note by id',
      inputSchema: { id: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ id }, extra) => {
      await effect('read_note', extra as unknown as Extra);
      return { content: [{ type: 'text', text: `note ${id}: buy milk` }] };
    },
  );
  server.registerTool(
    'set_flag',
    {
      description: 'Set a flag to a value',
      inputSchema: { flag: z.string(), value: z.boolean() },
      outputSchema: { flag: z.string(), value: z.boolean() },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    },
    async ({ flag, value }, extra) => {
      await effect('set_flag', extra as unknown as Extra);
      return {
        content: [{ type: 'text', text: JSON.stringify({ flag, value }) }],
        structuredContent: { flag, value },
      };
    },
  );
  server.registerTool(
    'append_line',
    {
      description: 'Append a line to the journal',
      inputSchema: { text: z.string() },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    async ({ text }, extra) => {
      await effect('append_line', extra as unknown as Extra);
      return { content: [{ type: 'text', text: `appended: ${text}` }] };
    },
  );
  server.registerTool(
    'wipe_journal',
    {
      description: 'Delete every line of the journal',
      inputSchema: {},
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async () => ({ content: [{ type: 'text', text: 'wiped' }] }),
  );
  server.registerTool(
    'refuse',
    { description: 'Always fails', inputSchema: { why: z.string() } },
    async ({ why }) => ({ content: [{ type: 'text', text: `refused: ${why}` }], isError: true }),
  );
  return server;
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

if (process.argv.includes('--http')) {
  // Stateless streamable HTTP: a fresh server and transport per POST (the SDK's documented way).
  const http = createServer((request, response) => {
    if (request.method !== 'POST') {
      response.writeHead(405).end();
      return;
    }
    void (async () => {
      const server = testServer();
      // No sessionIdGenerator: stateless.
      const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
      response.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request, response, await readBody(request));
    })().catch((error: unknown) => {
      process.stderr.write(`mcp-test-server: ${String(error)}\n`);
      if (!response.headersSent) response.writeHead(500).end();
    });
  });
  http.listen(0, '127.0.0.1', () => {
    const address = http.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    process.stdout.write(`listening ${address.port}\n`);
  });
} else {
  // The client closing stdin (or dying) ends this server.
  process.stdin.on('end', () => process.exit(0));
  await testServer().connect(new StdioServerTransport());
}
