// The demo's agent, shared by every process of the demo: a support agent with a read-only tool
// (look an order up) and a remote-mutation tool (refund it), which appends one line to a side
// channel file each time it really runs: the demo counts those lines.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import type { ModelDelta, ModelProvider, ModelResponse } from '@loom/reasoning';
import { StubModel } from '@loom/reasoning';
import { type Agent, defineAgent, defineTool } from '../src/index.js';

/** The run the demo drives. */
export const demoRunId = 'ticket-981';

/** What the customer wrote: the run's input. */
export const demoInput = 'Order A-17 never arrived.';

/** The order of the demo. */
export const demoOrderId = 'A-17';

/** What the scripted model does next, read from everything the conversation holds so far. */
export type Move = { tool: 'lookup_order' | 'refund'; input: { id: string } } | { text: string };

/**
 * The scripted support person: look the order up, refund it, say so. It answers from the
 * conversation (not from a call count), so a restarted process plays it the same way. The stub
 * model and the demo test's local chat-completions server both use it.
 */
export function nextMove(conversation: string): Move {
  if (!conversation.includes('paidCents'))
    return { tool: 'lookup_order', input: { id: demoOrderId } };
  if (!conversation.includes('refundId')) return { tool: 'refund', input: { id: demoOrderId } };
  return { text: `Order ${demoOrderId} was never delivered; I refunded it.` };
}

/** The stub model of `pnpm demo`: no network, no key. */
export function stubSupportModel(): ModelProvider {
  return new StubModel({
    script: (request) => {
      const move = nextMove(JSON.stringify(request.messages));
      return 'text' in move ? { text: move.text } : { toolCalls: [move] };
    },
  });
}

/** Lines in the side channel file: how many refunds really ran. */
export function refundsIn(file: string): string[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '');
}

/** Wraps a model so that each answer is printed as it arrives (a replay calls no model). */
export function printingModel(model: ModelProvider, print: (line: string) => void): ModelProvider {
  const say = (response: ModelResponse) => {
    const calls = response.toolCalls.map((c) => `${c.tool} ${JSON.stringify(c.input)}`);
    print(
      calls.length > 0
        ? `model (${response.model}) asks for ${calls.join(', ')}`
        : `model (${response.model}) answers: ${JSON.stringify(response.text)}`,
    );
  };
  return {
    id: model.id,
    generate: async (request) => {
      const response = await model.generate(request);
      say(response);
      return response;
    },
    stream: async function* (request): AsyncGenerator<ModelDelta> {
      for await (const delta of model.stream(request)) {
        if (delta.type === 'finish') say(delta.response);
        yield delta;
      }
    },
  };
}

/**
 * The support agent: `lookup_order` (read_only: runs at once) and `refund` (remote_mutation:
 * the default policy asks a person first). `refund` appends `<order> <idempotency key>` to
 * `refundsFile` each time it runs.
 */
export function supportAgent(options: {
  model: ModelProvider;
  refundsFile: string;
  print: (line: string) => void;
}): Agent {
  const lookup = defineTool({
    name: 'lookup_order',
    description: 'Look an order up by id: what was paid and whether it was delivered',
    input: {
      type: 'object',
      properties: { id: { type: 'string' } },
      required: ['id'],
      additionalProperties: false,
    },
    sideEffect: 'read_only',
    run: async (input: { id: string }) => {
      options.print(`tool lookup_order ${input.id}: paid 42.00, not delivered`);
      return { id: input.id, paidCents: 4_200, delivered: false };
    },
  });
  const refund = defineTool({
    name: 'refund',
    description: 'Refund an order in full',
    input: {
      type: 'object',
      properties: { id: { type: 'string' } },
      required: ['id'],
      additionalProperties: false,
    },
    sideEffect: 'remote_mutation',
    run: async (input: { id: string }, context) => {
      appendFileSync(options.refundsFile, `${input.id} ${context.idempotencyKey}\n`);
      options.print(
        `tool refund ${input.id}: money sent (idempotency key ${context.idempotencyKey}), one line appended to the side channel`,
      );
      return { refundId: `rf-${input.id}`, amountCents: 4_200 };
    },
  });
  return defineAgent({
    name: 'support',
    model: printingModel(options.model, options.print),
    instructions:
      'You resolve order complaints. Look the order up first. Refund orders that were never delivered, then tell the customer in one sentence.',
    tools: [lookup, refund],
  });
}
