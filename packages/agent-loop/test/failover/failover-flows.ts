// The module the agents' failover campaign gives `loom worker --flows` (agent-failover.test.ts):
// what a user deploys, on the multi-host URL. It exports
// - `payer`, an agent whose model is an OpenAI-compatible chat-completions endpoint
//   (LOOM_OPENAI_BASE_URL: the test's local server) and whose tools are `lookup_order`
//   (read_only: may run again) and `charge` (remote_mutation, allowed by the policy: at most once;
//   a call whose outcome a lost connection left unknown waits for a person). Every run of
//   `charge` appends one line to LOOM_FAILOVER_DIR/charges.log: `<idempotencyKey> <pid> <output>`,
//   the record outside the database a person reads before deciding;
// - `failoverJob`, the flow of the queue's items: a plain step (a line in effects.log per run), a
//   `ctx.transaction` writing one row of `failover_side` (exactly once), a durable sleep;
// - `failoverTick`, the flow a schedule fires every second: one `failover_side` row per fire.
// The side table lives in LOOM_FAILOVER_SCHEMA, beside the log.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { defineAgent, defineTool } from '@loom/agent-loop';
import { fromAiSdk } from '@loom/reasoning/ai-sdk';
import { defineFlow } from '@loom/workflow-runtime';
import { z } from 'zod';

const directory = process.env.LOOM_FAILOVER_DIR ?? '.';
const schema = process.env.LOOM_FAILOVER_SCHEMA ?? 'loom';
/** How long `charge` takes: the window in which a lost primary leaves its outcome unknown. */
const chargeMs = Number(process.env.LOOM_FAILOVER_CHARGE_MS ?? 300);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface SqlClient {
  query(sql: string, values: unknown[]): Promise<unknown>;
}
/** One row per exactly-once write: a duplicate shows as a second row (no unique key on purpose). */
const insertSide = async (tx: unknown, kind: string, id: string) => {
  await (tx as SqlClient).query(
    `INSERT INTO "${schema}".failover_side (kind, id) VALUES ($1, $2)`,
    [kind, id],
  );
};

const provider = createOpenAICompatible({
  name: 'failover-model',
  baseURL: process.env.LOOM_OPENAI_BASE_URL ?? 'http://127.0.0.1:9/v1',
  apiKey: 'none',
  includeUsage: true,
});

const lookup = defineTool({
  name: 'lookup_order',
  description: 'Look an order up by its number',
  input: z.object({ order: z.number() }),
  sideEffect: 'read_only',
  run: async (input) => ({ order: input.order, amountCents: 100 * input.order + 1 }),
});

const charge = defineTool({
  name: 'charge',
  description: "Charge the customer's card for an order",
  input: z.object({ order: z.number() }),
  sideEffect: 'remote_mutation',
  run: async (input, context) => {
    const output = { order: input.order, receipt: `r-${context.idempotencyKey}` };
    // The card is charged: recorded before anything is returned, as a payment system would.
    appendFileSync(
      join(directory, 'charges.log'),
      `${context.idempotencyKey} ${process.pid} ${JSON.stringify(output)}\n`,
    );
    await pause(chargeMs);
    return output;
  },
});

export const payer = defineAgent({
  name: 'payer',
  model: fromAiSdk(provider.chatModel('failover-model')),
  instructions: 'Look the order up, charge it once, then say so.',
  tools: [lookup, charge],
  // The charge needs no approval here: a person is asked only about an interrupted one.
  policy: () => ({ kind: 'allow' }),
});

export const failoverJob = defineFlow(
  { name: 'failover-job' },
  async (ctx, input: { index: number }) => {
    const a = await ctx.step('prepare', () => {
      appendFileSync(join(directory, 'effects.log'), `${ctx.executionId}\n`);
      return input.index;
    });
    await ctx.transaction('record', (tx) => insertSide(tx, 'job', ctx.executionId));
    await ctx.sleep(200 + ((input.index * 37) % 300));
    return a * 2 + 1;
  },
);

export const failoverTick = defineFlow({ name: 'failover-tick' }, async (ctx) => {
  await ctx.transaction('record', (tx) => insertSide(tx, 'tick', ctx.executionId));
  return null;
});
