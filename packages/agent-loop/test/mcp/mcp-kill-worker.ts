// One life of an agent process whose tools come from a real MCP server (mcp-test-server.ts, a
// stdio child of this process), on the SQLite file KILL_DB. The model calls MCP tool MCP_TOOL
// once, then says `finished`. With KILL_MID_CALL=1 the server hangs inside that tool after its
// side effect (a line in MCP_SIDE_CHANNEL) and tells so with a log message, on which this process
// SIGKILLs itself: it dies mid-call, the call's outcome unknown to the log. With KILL_RESOLVE set
// it first decides the run's pending interrupted_side_effect approval (`{ kind: 'rerun' }`).
// It prints one line, as kill-worker.ts does: `result <json>` or `approval <json>`.
import type { JsonValue } from '@loom/event-runtime';
import { testScriptArgs } from '@loom/event-runtime/testing';
import { StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { createAgentRuntime, defineAgent } from '../../src/index.js';
import { mcpTools } from '../../src/mcp/index.js';
import { decidePending, liveOneLife } from '../kill/worker-life.js';
import { serverScript } from './mcp-test-support.js';

const env = process.env as Record<string, string | undefined>;
const runId = env.KILL_RUN_ID as string;
const tool = env.MCP_TOOL as string;
const killMidCall = env.KILL_MID_CALL === '1';

const inputs: Record<string, { [key: string]: JsonValue }> = {
  append_line: { text: 'once' },
  read_note: { id: 'n1' },
  set_flag: { flag: 'urgent', value: true },
};

const client = new Client({ name: 'loom-kill-worker', version: '1.0.0' });
client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
  if (killMidCall && notification.params.data === 'side effect done') {
    process.kill(process.pid, 'SIGKILL');
  }
});
await client.connect(
  new StdioClientTransport({
    command: process.execPath,
    args: testScriptArgs(serverScript),
    env: {
      ...(process.env as Record<string, string>),
      MCP_SIDE_CHANNEL: env.MCP_SIDE_CHANNEL as string,
      ...(killMidCall ? { MCP_HANG_AFTER_EFFECT: tool } : {}),
    },
    stderr: 'inherit',
  }),
);

// The answer depends on the prompt, not on a call count: a restarted process has a fresh stub.
const model = new StubModel({
  script: (request) =>
    request.messages.some((message) => message.role === 'tool')
      ? { text: 'finished' }
      : { toolCalls: [{ tool, input: inputs[tool] ?? {} }] },
});
const agent = defineAgent({
  name: 'mcp-killable',
  model,
  instructions: `Call ${tool} once, then say finished.`,
  tools: await mcpTools(client, { include: [tool] }),
  // Every class runs without asking: this test is about crashes, not the default policy.
  policy: () => ({ kind: 'allow' }),
});

const { SqliteEventStore } = await import('@loom/event-runtime/sqlite');
const store = SqliteEventStore.open({ path: env.KILL_DB as string, migrate: true });
// One life at a time drives this log, so a dead predecessor's run is recovered at once.
const flows = createRuntime({ store, recoverQuietMs: 0, timerPollMs: 20 });
const agents = createAgentRuntime({ flows, agents: [agent] });

if (env.KILL_RESOLVE !== undefined) await decidePending(agents, runId, env.KILL_RESOLVE);
const outcome = await liveOneLife(flows, agents, agent, runId);
process.stdout.write(`${outcome}\n`);
await flows.shutdown();
await store.close();
await client.close();
process.exit(0);
