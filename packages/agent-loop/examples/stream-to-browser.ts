// A run's answer streamed to a browser as the AI SDK's UI message stream (what `useChat` reads),
// from an HTTP server that does not drive the run: one agent runtime (the worker) runs it, another
// on its own connection to the same SQLite file (the web server) answers GET /runs/<id> with
// agentRunResponse. The text reaches the server through the file's live channel (ADR 0050).
// Run: pnpm --filter @loom/agent-loop exec tsx examples/stream-to-browser.ts
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentRunResponse, createAgentRuntime, defineAgent } from '@loom/agent-loop';
import { type ModelProvider, StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { openSqlite } from '@loom/workflow-runtime/sqlite';

const path = join(mkdtempSync(join(tmpdir(), 'loom-stream-')), 'loom.db');

// A scripted model that writes its answer a word every 20 ms, as a real one would stream it.
const stub = new StubModel({ script: [{ text: 'Your order A-17 ships tomorrow morning.' }] });
const model: ModelProvider = {
  id: 'slow-stub',
  generate: (request) => stub.generate(request),
  async *stream(request) {
    for await (const delta of stub.stream(request)) {
      if (delta.type === 'text') await new Promise((resolve) => setTimeout(resolve, 20));
      yield delta;
    }
  },
};
const support = defineAgent({ name: 'support', model, instructions: 'Answer briefly.', tools: [] });

// The worker: drives runs.
const workerFlows = createRuntime({ backend: openSqlite({ path, migrate: true }) });
const worker = createAgentRuntime({ flows: workerFlows, agents: [support] });

// The web server: its own connection, no agents of its own; it only streams runs.
const webFlows = createRuntime({ backend: openSqlite({ path }) });
const web = createAgentRuntime({ flows: webFlows, agents: [] });
const server = createServer(async (req, res) => {
  const headers = new Headers();
  const lastEventId = req.headers['last-event-id'];
  if (typeof lastEventId === 'string') headers.set('last-event-id', lastEventId);
  const runId = (req.url ?? '').slice('/runs/'.length);
  const response = agentRunResponse(web, runId, { request: new Request('http://x/', { headers }) });
  res.writeHead(response.status, Object.fromEntries(response.headers));
  for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) res.write(bytes);
  res.end();
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/runs/chat-1`;

// The browser's side: fetch the stream (useChat does this), read the SSE events.
const run = await worker.start(support, 'When does order A-17 ship?', { runId: 'chat-1' });
const response = await fetch(url);
console.log(`protocol: ${response.headers.get('x-vercel-ai-ui-message-stream')}`);
const types: string[] = [];
let text = '';
const decoder = new TextDecoder();
let buffer = '';
for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
  buffer += decoder.decode(bytes, { stream: true });
  for (let cut = buffer.indexOf('\n\n'); cut !== -1; cut = buffer.indexOf('\n\n')) {
    const data = /^data: (.*)$/m.exec(buffer.slice(0, cut))?.[1] ?? '';
    buffer = buffer.slice(cut + 2);
    if (data === '[DONE]') continue;
    const chunk = JSON.parse(data) as { type: string; delta?: string };
    if (types.at(-1) !== chunk.type) types.push(chunk.type);
    if (chunk.type === 'text-delta') text += chunk.delta;
  }
}
console.log(`chunks: ${types.join(' ')}`);
console.log(`text: ${text}`);
console.log(`result: ${(await run.result()).reason}`);
server.close();
await workerFlows.shutdown();
await webFlows.shutdown();
