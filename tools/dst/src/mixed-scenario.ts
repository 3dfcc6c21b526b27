import { defineFlow } from '@loom/workflow-runtime';
import type { SimFlow } from './runtime-adapter.js';
import { type Scenario, signalAt, startAt } from './scenario.js';
import type { SimWorld } from './sim-world.js';

/** Virtual ms an effect may take (drawn per execution and step from its id, so replay agrees). */
const effectMsMax = 400;

function effectMs(executionId: string, index: number): number {
  let hash = index;
  for (let at = 0; at < executionId.length; at++)
    hash = (hash * 31 + executionId.charCodeAt(at)) >>> 0;
  return hash % effectMsMax;
}

/** n plain steps, each waiting a little on the runtime's clock: writes exactly 2n + 2 events. */
export const plainFlow = defineFlow(
  { name: 'dst.plain' },
  async (ctx, input: { steps: number }) => {
    let total = 0;
    for (let index = 0; index < input.steps; index++) {
      total += await ctx.step(`step-${index}`, async (effect) => {
        await new Promise<void>((resolve) =>
          effect.clock.setTimer(resolve, effectMs(ctx.executionId, index)),
        );
        return index;
      });
    }
    return total;
  },
);

/** A step, a durable sleep, a step: the timer must never fire before it is due. */
export const sleepFlow = defineFlow(
  { name: 'dst.sleep' },
  async (ctx, input: { sleepMs: number }) => {
    await ctx.step('before', () => 'before');
    await ctx.sleep(input.sleepMs);
    await ctx.step('after', () => 'after');
    return input.sleepMs;
  },
);

/** Waits for signal `go` (sent once or twice with one idempotency key), then a step. */
export const signalFlow = defineFlow({ name: 'dst.signal' }, async (ctx) => {
  const go = await ctx.waitForSignal<{ n: number }>('go');
  return ctx.step('after-go', () => (go.received ? go.payload.n : -1));
});

/** One step: what a queue item and a cron occurrence run. */
export const tickFlow = defineFlow({ name: 'dst.tick' }, async (ctx) => {
  return ctx.step('tick', () => ctx.executionId);
});

/**
 * One step that takes a while, at most one run per tenant at once across every node (per-key
 * concurrency, ADR 0059): the simulator checks after every claim that no tenant is over it.
 */
export const keyedFlow = defineFlow(
  {
    name: 'dst.keyed',
    concurrency: { key: (input: { tenant: string }) => input.tenant, limit: 1 },
  },
  async (ctx, input) =>
    ctx.step('keyed', async (effect) => {
      await new Promise<void>((resolve) =>
        effect.clock.setTimer(resolve, effectMs(ctx.executionId, 0)),
      );
      return input.tenant;
    }),
);

const flows = [plainFlow, sleepFlow, signalFlow, tickFlow, keyedFlow] as unknown as SimFlow[];

const queueName = 'dst-q';
const queueConcurrencyMax = 2;

/** How much of each kind one seed runs. */
const counts = { plain: 6, sleep: 3, signal: 3, queued: 6, keyed: 4 } as const;

/**
 * The built-in scenario: on 3 nodes, plain flows, durable sleeps, signals (some sent twice with
 * one key), a queue with a global concurrency limit worked by every node (with keyed items of a
 * flow limited to one run per tenant), and a cron schedule
 * firing every minute, for three virtual minutes of faults.
 */
export const mixedScenario: Scenario = {
  name: 'mixed',
  horizonMs: 180_000,
  nodes: 3,
  boot: () => ({
    flows,
    queues: [{ queue: queueName, concurrencyMax: queueConcurrencyMax }],
    onBoot: (runtime) => runtime.schedule(tickFlow as unknown as SimFlow, '* * * * *', 'dst-cron'),
  }),
  drive(world: SimWorld) {
    const random = world.random.fork('workload');
    const spreadMs = 60_000;
    for (let index = 0; index < counts.plain; index++) {
      startAt(
        world,
        random.int(spreadMs),
        plainFlow as unknown as SimFlow,
        { steps: random.between(1, 4) },
        `plain-${index}`,
      );
    }
    for (let index = 0; index < counts.sleep; index++) {
      const sleepMs = random.pick([300, 1_500, 5_000, 20_000]);
      startAt(
        world,
        random.int(spreadMs),
        sleepFlow as unknown as SimFlow,
        { sleepMs },
        `sleep-${index}`,
      );
    }
    for (let index = 0; index < counts.signal; index++) {
      const executionId = `signal-${index}`;
      const startMs = random.int(spreadMs);
      startAt(world, startMs, signalFlow as unknown as SimFlow, null, executionId);
      const signal = {
        executionId,
        name: 'go',
        payload: { n: index },
        idempotencyKey: `${executionId}:go`,
      };
      signalAt(world, { ...signal, atMs: startMs + random.between(100, 10_000) });
      if (random.chance(0.5))
        signalAt(world, { ...signal, atMs: startMs + random.between(100, 20_000) });
    }
    for (let index = 0; index < counts.queued; index++) {
      const itemId = `item-${index}`;
      world.clock.setTimer(() => {
        void world.client.retryAny(`enqueue ${itemId}`, (node) =>
          node.runtime.enqueue(queueName, tickFlow as unknown as SimFlow, null, itemId),
        );
      }, random.int(spreadMs));
    }
    // Keyed items over two tenants, enqueued close together so their runs would overlap. Drawn
    // from their own fork, so the rest of the workload is what it was for a given seed.
    const keyedRandom = world.random.fork('keyed-workload');
    const keyedAtMs = keyedRandom.int(spreadMs);
    for (let index = 0; index < counts.keyed; index++) {
      const itemId = `keyed-${index}`;
      const input = { tenant: `tenant-${index % 2}` };
      world.clock.setTimer(() => {
        void world.client.retryAny(`enqueue ${itemId}`, (node) =>
          node.runtime.enqueue(queueName, keyedFlow as unknown as SimFlow, input, itemId),
        );
      }, keyedAtMs + keyedRandom.int(500));
    }
  },
  mustSettle: () => [
    ...ids('plain', counts.plain),
    ...ids('sleep', counts.sleep),
    ...ids('signal', counts.signal),
    ...Array.from({ length: counts.queued }, (_, index) => `queue:${queueName}:item-${index}`),
    ...Array.from({ length: counts.keyed }, (_, index) => `queue:${queueName}:keyed-${index}`),
  ],
};

function ids(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}-${index}`);
}
