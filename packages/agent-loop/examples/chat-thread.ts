// A chat on a thread, on SQLite with the stub model: each message is its own run, and each reply
// is written knowing the earlier messages (the prompt holds them). The second message makes the
// model look an order up (read_only); the third arrives while that turn still runs and is queued
// behind it. Run: pnpm --filter @loom/agent-loop exec tsx examples/chat-thread.ts
import { createAgentRuntime, defineAgent, defineTool } from '@loom/agent-loop';
import { StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import { z } from 'zod';

const lookup = defineTool({
  name: 'lookup_order',
  description: 'Look an order up by id',
  input: z.object({ id: z.string() }),
  sideEffect: 'read_only',
  run: async (input) => ({ id: input.id, status: 'shipped', eta: 'Friday' }),
});

// A scripted model standing in for a real one: it answers from what the prompt holds.
const model = new StubModel({
  script: (request) => {
    const users = request.messages.filter((m) => m.role === 'user').map((m) => m.content);
    const message = users.at(-1) ?? '';
    const said = JSON.stringify(request.messages);
    if (message.includes('A-17') && request.messages.at(-1)?.role !== 'tool') {
      return { toolCalls: [{ tool: 'lookup_order', input: { id: 'A-17' } }] };
    }
    if (message.includes('A-17')) return { text: 'A-17 has shipped; it arrives Friday.' };
    if (message.startsWith('Hi')) return { text: 'Hello Ana! How can I help?' };
    // A follow-up: the answer comes from the earlier exchanges in the prompt.
    return {
      text: said.includes('Friday')
        ? `You asked ${users.length - 1} things before this; A-17 still arrives Friday.`
        : 'Which order?',
    };
  },
});
const support = defineAgent({
  name: 'support',
  model,
  instructions: 'You answer customers about their orders.',
  tools: [lookup],
  thread: { busy: 'queue' }, // the default; 'reject' or 'interrupt' a message sent mid-turn
});

const flows = createRuntime({ backend: openSqlite({ path: ':memory:', migrate: true }) });
const agents = createAgentRuntime({ flows, agents: [support] });

const chat = agents.thread(support, 'chat-ana');
const hello = await chat.send('Hi, I am Ana.');
console.log('reply 1:', (await hello.result()).output);

const order = await chat.send('Where is my order A-17?');
const followUp = await chat.send('And when does it arrive?'); // sent while turn 2 may still run
for await (const event of agents.stream(order)) {
  if (event.type === 'tool_completed') console.log(`turn ${order.message} called ${event.tool}`);
}
console.log('reply 2:', (await order.result()).output);
console.log('reply 3:', (await followUp.result()).output, `(run ${followUp.runId})`);

for (const message of await chat.messages()) {
  const text = message.role === 'tool' ? message.content : message.text;
  console.log(`  ${message.message} ${message.role}: ${text || '(calls a tool)'}`);
}
await flows.shutdown(); // closes the backend it was given
