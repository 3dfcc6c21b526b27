// The replay test's agent after a change: its tool was renamed (lookup_order → find_order).
import { defineAgent, defineTool } from '@loom/agent-loop';
import { StubModel } from '@loom/reasoning';

/** Calls of the tool in this process (a replay must make none). */
export const lookups = [];

export const lookup = defineTool({
  name: 'find_order',
  description: 'Look an order up',
  input: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  sideEffect: 'read_only',
  run: async (input) => {
    lookups.push(input);
    return { id: input.id, status: 'shipped' };
  },
});

// Answers by what the model was shown: a tool result in the history means it can answer.
const model = new StubModel({
  script: (request) =>
    JSON.stringify(request.messages).includes('shipped')
      ? { text: 'order 7 has shipped' }
      : { toolCalls: [{ tool: 'find_order', input: { id: '7' } }] },
});

export const support = defineAgent({
  name: 'support',
  model,
  instructions: 'answer questions about orders',
  tools: [lookup],
});
