// One life of a process chatting on thread TH_THREAD on the SQLite file TH_DB (or, with
// TH_BACKEND=postgres, the schema TH_SCHEMA of TH_PG_URL). It sends 'hello' (messageId m1) and
// 'look loom' (m2), each again if an earlier life sent it (a client retrying after a lost
// response), and waits for the replies. The model appends a line per call to TH_MODEL_CALLS,
// the read_only tool one per call to TH_TOOL_CALLS. TH_KILL=1 makes it SIGKILL itself once the
// model's answer to m2 (a tool call) is durable: the message accepted, its reply not yet given.
// Prints `result <json>`: the replies and thread.messages().
import { appendFileSync } from 'node:fs';
import { StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { createAgentRuntime, defineAgent, defineTool } from '../../src/index.js';
import { openWorkerStore } from '../kill/worker-store.js';

const env = process.env as Record<string, string | undefined>;
const threadId = env.TH_THREAD as string;

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a word up',
  input: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
  sideEffect: 'read_only',
  run: async (input, context) => {
    appendFileSync(env.TH_TOOL_CALLS as string, `${context.idempotencyKey}\n`);
    return { meaning: `the meaning of ${(input as { word: string }).word}` };
  },
});
const chat = defineAgent({
  name: 'chat',
  model: new StubModel({
    script: (request) => {
      const users = request.messages.filter((m) => m.role === 'user');
      const last = users.at(-1)?.content ?? '';
      appendFileSync(env.TH_MODEL_CALLS as string, `${last}\n`);
      if (last.startsWith('look') && request.messages.at(-1)?.role !== 'tool') {
        return { toolCalls: [{ tool: 'lookup', input: { word: last.slice(5) } }] };
      }
      return { text: `re: ${last} (${users.length - 1} earlier)` };
    },
  }),
  instructions: 'Chat with the user.',
  tools: [lookup],
});

const store = await openWorkerStore('TH');
// One life at a time drives this store, so a dead predecessor's runs are recovered at once. The
// thread, suspended when the first life died, is made due by its turn's end, but the timer poll
// that claims it does not resume it (seen: no lease acquired, the first life's not yet given up);
// the next recovery round does, so rounds come every 100 ms here instead of 5 s.
const flows = createRuntime({ store, recoverQuietMs: 0, timerPollMs: 20, recoverEveryMs: 100 });
const agents = createAgentRuntime({
  flows,
  agents: [chat],
  onTransition: (transition) => {
    if (
      env.TH_KILL === '1' &&
      transition.type === 'decided' &&
      transition.runId === `${threadId}/2`
    ) {
      process.kill(process.pid, 'SIGKILL');
    }
  },
});
await flows.recover();
const thread = agents.thread(chat, threadId);
const first = await thread.send('hello', { messageId: 'm1' });
const firstReply = (await first.result()).output;
const second = await thread.send('look loom', { messageId: 'm2' });
const secondResult = await second.result();
// The thread takes its turn's end (child.completed) once it resumes: wait for it, within a deadline.
const deadline = Date.now() + 10_000;
while ((await store.read(threadId)).filter((e) => e.type === 'child.completed').length < 2) {
  if (Date.now() > deadline)
    throw new Error('the thread did not record the end of its second turn within 10 s');
  await new Promise((resolve) => setTimeout(resolve, 10));
}
console.log(
  `result ${JSON.stringify({
    replies: [firstReply, secondResult.output],
    turns: [first.runId, second.runId],
    reason: secondResult.reason,
    messages: await thread.messages(),
  })}`,
);
await flows.shutdown();
await store.close();
