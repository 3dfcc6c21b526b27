// An agent `loom worker --flows` runs (the worker-agents test): it refunds an order with a
// remote_mutation tool, which the default policy sends to a person first. Each call of the tool
// appends its idempotency key to the file $AGENT_EFFECTS, in whichever process runs it.
import { appendFileSync } from 'node:fs';
import { defineAgent, defineTool } from '@loom/agent-loop';
import { StubModel } from '@loom/reasoning';

export const refund = defineTool({
  name: 'refund',
  description: 'Refund an order',
  input: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  sideEffect: 'remote_mutation',
  run: async (input, context) => {
    appendFileSync(process.env.AGENT_EFFECTS, `${context.idempotencyKey}\n`);
    return { refunded: input.id };
  },
});

// Answers by what the model was shown: the tool's result in the history means it is done.
const model = new StubModel({
  script: (request) =>
    JSON.stringify(request.messages).includes('refunded')
      ? { text: 'refund done' }
      : { toolCalls: [{ tool: 'refund', input: { id: 'A-17' } }] },
});

export const refunder = defineAgent({
  name: 'refunder',
  model,
  instructions: 'refund the order the user names',
  tools: [refund],
});
