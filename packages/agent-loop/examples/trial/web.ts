// The trial's web server: useChat's endpoint for the support agent's threads, on the database
// LOOM_DB (sqlite:<path> or postgres://…?schema=<name>), on 127.0.0.1:PORT (0: any free port).
// It sends messages and streams turns; the workers (`loom worker`) take the turns on.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAgentRuntime, nodeListener, threadChatHandler } from '@loom/agent-loop';
import { createRuntime } from '@loom/workflow-runtime';
import { openPostgres } from '@loom/workflow-runtime/postgres';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import { support } from './support.js';

const db = process.env.LOOM_DB ?? 'sqlite:loom.db';
const url = new URL(db.startsWith('sqlite:') ? 'sqlite:x' : db);
const backend = db.startsWith('sqlite:')
  ? openSqlite({ path: db.slice('sqlite:'.length) })
  : await openPostgres({
      connectionString: db,
      schema: url.searchParams.get('schema') ?? 'loom',
    });
// It runs nothing: a thread it starts is written due for a worker (handOffStarts), and with no
// timer poll and no recovery round it takes no suspended or orphaned run back. The agent is
// registered only to send to its threads.
const flows = createRuntime({ backend, handOffStarts: true, timerPollMs: 0, recoverEveryMs: 0 });
const agents = createAgentRuntime({ flows, agents: [support] });

// POST /api/chat (useChat's messages) and GET /api/chat/<id>/stream (its resume).
const server = createServer(nodeListener(threadChatHandler(agents, support)));
server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening http://127.0.0.1:${(server.address() as AddressInfo).port}/api/chat`);
});
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => void flows.shutdown());
});
