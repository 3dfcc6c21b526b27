import type { Backend } from '@loom/event-runtime';
import type { Command } from 'commander';
import { LoomError, ViewErrorCode } from './errors.js';
import { parseDbUrl } from './internal/db-url.js';
import { deployedOf } from './internal/deployed.js';

/** `loom chat --port`'s default (the AI SDK's examples serve on 3000). */
export const chatPortDefault = 3000;

/** What `loom chat` needs from the command around it. */
export interface ChatCommandDeps {
  db(command: Command): string;
  /** Writes a line to stdout: the value with `--json`, else the text. */
  print(value: unknown, human: () => string): void;
  /** Resolves on the signal to stop (the bin: the next SIGTERM or SIGINT). */
  untilStopped(): Promise<void>;
}

interface ChatFlags {
  flows: string;
  agent?: string;
  port?: string;
  host?: string;
}

/**
 * `loom chat --flows <module>`: the chat endpoint of a thread agent for the AI SDK's `useChat`
 * (agent-loop's `threadChatHandler`: POST sends the last user message to the thread the body
 * names and streams its turn; GET `…/<id>/stream` resumes it, or 204), served over HTTP. It runs
 * nothing: its runtime hands off what it starts (`handOffStarts`) and polls and recovers nothing,
 * so the turns run on `loom worker` processes. No code of the user's own but the agent module.
 */
export function addChatCommand(program: Command, deps: ChatCommandDeps): void {
  program
    .command('chat')
    .description(
      "a thread agent's chat endpoint for the AI SDK's useChat (POST /api/chat, GET /api/chat/<id>/stream); the turns run on loom worker processes",
    )
    .requiredOption(
      '--flows <module>',
      'the module that exports the agent (JavaScript or TypeScript)',
    )
    .option('--agent <name>', 'which agent, when the module exports more than one')
    .option('--port <n>', `port to listen on; 0 picks a free one (default ${chatPortDefault})`)
    .option('--host <host>', 'address to listen on (default 127.0.0.1)')
    .action(async (flags: ChatFlags, command: Command) => {
      const port = portOf(flags.port);
      const host = flags.host ?? '127.0.0.1';
      const target = parseDbUrl(deps.db(command));
      const { agents } = await deployedOf(flags.flows);
      const agent = pick(agents, flags.agent, flags.flows);
      const [
        { createAgentRuntime, nodeListener, threadChatHandler },
        { createRuntime },
        { openBackend },
        { createServer },
      ] = await Promise.all([
        import('@loom/agent-loop'),
        import('@loom/workflow-runtime'),
        import('./internal/open-backend.js'),
        import('node:http'),
      ]);
      const backend: Backend = await openBackend(target, false);
      // Sends and streams; runs nothing and takes nothing back.
      const flows = createRuntime({
        backend,
        handOffStarts: true,
        timerPollMs: 0,
        recoverEveryMs: 0,
      });
      const runtime = createAgentRuntime({ flows, agents: [agent] });
      const server = createServer(nodeListener(threadChatHandler(runtime, agent)));
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(port, host, () => resolve());
        });
        const address = server.address();
        const listening = typeof address === 'object' && address !== null ? address.port : port;
        const url = `http://${host.includes(':') ? `[${host}]` : host}:${listening}/api/chat`;
        deps.print(
          { event: 'ready', url, agent: agent.name },
          () => `loom: chat with ${agent.name} on ${url} (the turns run on loom worker processes)`,
        );
        await deps.untilStopped();
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await runtime.close();
        await flows.shutdown();
      }
    });
}

function portOf(value: string | undefined): number {
  if (value === undefined) return chatPortDefault;
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n) || n < 0 || n > 65_535) {
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      `--port must be a port number from 0 to 65535, got '${value}'`,
      { path: 'port', actual: value },
    );
  }
  return n;
}

/** The agent to serve: the one the module exports, or the one `--agent` names. */
function pick<A extends { name: string }>(
  agents: readonly A[],
  name: string | undefined,
  module: string,
): A {
  if (name !== undefined) {
    const named = agents.find((agent) => agent.name === name);
    if (named !== undefined) return named;
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      `--agent '${name}' is not among the agents ${module} exports (${agents.map((a) => a.name).join(', ') || 'none'})`,
      { path: 'agent', actual: name },
    );
  }
  if (agents.length === 1) return agents[0] as A;
  throw new LoomError(
    ViewErrorCode.INVALID_ARGUMENT,
    agents.length === 0
      ? `${module} exports no agent: loom chat serves a thread agent (defineAgent)`
      : `${module} exports ${agents.length} agents (${agents.map((a) => a.name).join(', ')}): name one with --agent`,
    { path: 'flows', actual: module },
  );
}
