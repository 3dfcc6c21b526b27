import type { StoredEvent } from '@loom/event-runtime';
import {
  defineFlow,
  eventRunId,
  eventsQueue,
  eventWaitPrefix,
  type PublishedEvent,
} from '@loom/workflow-runtime';
import type { SimFlow } from './runtime-adapter.js';
import { type Scenario, signalAt, startAt } from './scenario.js';
import type { SimWorld, Violation } from './sim-world.js';

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

/**
 * A record, a durable sleep, a step: the timer must never fire before it is due. The record
 * (`ctx.record`, no start record of its own) is made durable by the sleep's suspension.
 */
export const sleepFlow = defineFlow(
  { name: 'dst.sleep' },
  async (ctx, input: { sleepMs: number }) => {
    await ctx.record('before', () => 'before');
    await ctx.sleep(input.sleepMs);
    await ctx.step('after', () => 'after');
    return input.sleepMs;
  },
);

/**
 * Waits for signal `go` (sent once or twice with one idempotency key), then records what it got
 * (`ctx.record`: durable in the same write as the end).
 */
export const signalFlow = defineFlow({ name: 'dst.signal' }, async (ctx) => {
  const go = await ctx.waitForSignal<{ n: number }>('go');
  return ctx.record('after-go', () => (go.received ? go.payload.n : -1));
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
    // One start per tenant per second of simulated time: the tenant's second item waits for the
    // window (the throttle-limit invariant; a claim allowing limit + 1 is caught).
    throttle: { key: (input: { tenant: string }) => input.tenant, limit: 1, periodMs: 1_000 },
  },
  async (ctx, input) =>
    ctx.step('keyed', async (effect) => {
      await new Promise<void>((resolve) =>
        effect.clock.setTimer(resolve, effectMs(ctx.executionId, 0)),
      );
      return input.tenant;
    }),
);

/**
 * Debounced per document (ADR 0059): bursts of enqueues of one document collapse into one run
 * while it has not started; the simulator checks that every claimed debounced item carries the
 * last input the store applied to it, was due, and took no enqueue after its claim.
 */
export const debouncedFlow = defineFlow(
  {
    name: 'dst.debounced',
    debounce: {
      key: (input: { doc: string; n: number }) => input.doc,
      periodMs: 1_000,
      maxWaitMs: 3_000,
    },
  },
  async (ctx, input) => ctx.step('index', () => `${input.doc}-${input.n}`),
);

/**
 * A singleton with `mode: 'cancel'` per document (ADR 0059): a newer start cancels the unfinished
 * one. Its items share a partition of limit 1, so the `key-limit` invariant checks that two runs
 * of a document are never claimed at once, through the cancels, crashes and re-claims.
 */
export const latestFlow = defineFlow(
  {
    name: 'dst.latest',
    singleton: { key: (input: { doc: string; n: number }) => input.doc, mode: 'cancel' },
  },
  async (ctx, input) => {
    await ctx.sleep(500);
    return ctx.step('render', () => `${input.doc}-${input.n}`);
  },
);

/**
 * Started by events `dst.ping` (ADR 0060), one run per `data.key`: the simulator checks that each
 * key published has exactly one run and that nothing else was started.
 */
export const eventFlow = defineFlow(
  {
    name: 'dst.on-event',
    trigger: {
      event: 'dst.ping',
      idempotency: (event: PublishedEvent<{ key: string }>) => event.data.key,
    },
  },
  async (ctx, event) => ctx.step('pong', () => event.data.key),
);

/** How long a waiter waits for its ping (virtual ms): pings are published in the first minute. */
const waitTimeoutMs = 100_000;

/**
 * Waits for a `dst.ping` of its key (`ctx.waitForEvent`, ADR 0060), a wait no node is triggered
 * for: the simulator checks each wait is woken once, by an event of its key published after it
 * started, and that one published well inside its window does wake it.
 */
export const waitFlow = defineFlow(
  { name: 'dst.wait-ping', waitsForEvents: ['dst.ping'] },
  async (ctx, input: { key: string }) => {
    const ping = await ctx.waitForEvent<{ key: string }>('dst.ping', {
      match: { 'data.key': input.key },
      timeout: waitTimeoutMs,
    });
    return ctx.step('after-ping', () => (ping.received ? ping.event.id : 'timed out'));
  },
);

const flows = [
  plainFlow,
  sleepFlow,
  signalFlow,
  tickFlow,
  keyedFlow,
  eventFlow,
  debouncedFlow,
  latestFlow,
  waitFlow,
] as unknown as SimFlow[];

/** What one seed published: event ids, and the keys they carry (ids repeat, keys repeat). */
interface PublishedPlan {
  ids: Set<string>;
  keys: Set<string>;
}
const publishedBy = new WeakMap<SimWorld, PublishedPlan>();

const queueName = 'dst-q';
const queueConcurrencyMax = 2;

/** How much of each kind one seed runs. */
const counts = {
  plain: 6,
  sleep: 3,
  signal: 3,
  queued: 6,
  keyed: 4,
  events: 5,
  debounced: 8,
  latest: 6,
  waiters: 3,
} as const;

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
    // Bursts of debounced enqueues over two documents, a few hundred ms apart (some within the
    // period, some past it, and maxWaitMs caps a long burst), from their own fork.
    const debounceRandom = world.random.fork('debounce-workload');
    let debounceAtMs = debounceRandom.int(spreadMs);
    for (let n = 0; n < counts.debounced; n++) {
      debounceAtMs += debounceRandom.int(700);
      const itemId = `debounced-${n}`;
      const input = { doc: `doc-${n % 2}`, n };
      world.clock.setTimer(() => {
        void world.client.retryAny(`enqueue ${itemId}`, (node) =>
          node.runtime.enqueue(queueName, debouncedFlow as unknown as SimFlow, input, itemId),
        );
      }, debounceAtMs);
    }
    // Starts of a cancel-mode singleton over two documents, close enough that newer ones replace
    // older ones still running or waiting, from their own fork.
    const latestRandom = world.random.fork('latest-workload');
    let latestAtMs = latestRandom.int(spreadMs);
    for (let n = 0; n < counts.latest; n++) {
      latestAtMs += latestRandom.int(400);
      const itemId = `latest-${n}`;
      const input = { doc: `doc-${n % 2}`, n };
      world.clock.setTimer(() => {
        void world.client.retryAny(`enqueue ${itemId}`, (node) =>
          node.runtime.enqueue(queueName, latestFlow as unknown as SimFlow, input, itemId),
        );
      }, latestAtMs);
    }
    // Events, some published twice with one id and some with a key another event carries, from
    // their own fork so the rest of the workload is what it was for a given seed.
    const eventRandom = world.random.fork('event-workload');
    const plan: PublishedPlan = { ids: new Set(), keys: new Set() };
    publishedBy.set(world, plan);
    for (let index = 0; index < counts.events; index++) {
      const id = `ping-${index}`;
      const key = `key-${eventRandom.int(3)}`;
      plan.ids.add(id);
      plan.keys.add(key);
      const publish = (atMs: number) =>
        world.clock.setTimer(() => {
          void world.client.retryAny(`publish ${id}`, (node) =>
            node.runtime.publish('dst.ping', { key }, id),
          );
        }, atMs);
      const atMs = eventRandom.int(spreadMs);
      publish(atMs);
      if (eventRandom.chance(0.5)) publish(atMs + eventRandom.int(5_000));
    }
    // Waiters for the pings' keys, started in the first half minute (some before their key's
    // pings, some after), from their own fork.
    const waitRandom = world.random.fork('wait-workload');
    // And a ping of each waiter's key published within 300 ms of its start (its own fork): while
    // the wait's start write may still be held (a paused node, a busy store), so its delivery may
    // scan before the wait is in the index and only the wait's catch-up can take it.
    const nearRandom = world.random.fork('near-ping-workload');
    for (let index = 0; index < counts.waiters; index++) {
      const startMs = waitRandom.int(30_000);
      startAt(
        world,
        startMs,
        waitFlow as unknown as SimFlow,
        { key: `key-${index}` },
        `waiter-${index}`,
      );
      const id = `near-ping-${index}`;
      const key = `key-${index}`;
      plan.ids.add(id);
      plan.keys.add(key);
      world.clock.setTimer(() => {
        void world.client.retryAny(`publish ${id}`, (node) =>
          node.runtime.publish('dst.ping', { key }, id),
        );
      }, startMs + nearRandom.int(300));
    }
  },
  mustSettle: (world) => [
    ...[...(publishedBy.get(world)?.ids ?? [])].map((id) => `queue:${eventsQueue}:${id}`),
    ...[...(publishedBy.get(world)?.keys ?? [])].map((key) => eventRunId('dst.on-event', key)),
    ...ids('plain', counts.plain),
    ...ids('sleep', counts.sleep),
    ...ids('signal', counts.signal),
    ...ids('waiter', counts.waiters),
    ...Array.from({ length: counts.queued }, (_, index) => `queue:${queueName}:item-${index}`),
    ...Array.from({ length: counts.keyed }, (_, index) => `queue:${queueName}:keyed-${index}`),
  ],
  check: async (world, log) => [
    ...eventStartsOnce(publishedBy.get(world), log),
    ...waitsWokenOnce(log),
  ],
};

/**
 * How long before a waiter's timeout a matching ping must be published to be owed to it: its
 * delivery takes up to a poll and a claim. None at the start: a ping published at or after the
 * wait's start time is owed to it, also when the wait's start was written late (the store busy,
 * the write sent again with its earlier time) and the ping's delivery scanned before it was in
 * the index: the wait's catch-up takes it then.
 */
const waitOwedEndMarginMs = 1_000;

/**
 * `wait-once`: every wait (`loom.wait:dst.ping:…`) took at most one event, and that event has the
 * wait's key and was published no earlier than the wait started; a wait that timed out had no
 * matching ping published inside its window (from its start, to a margin before its timeout).
 */
function waitsWokenOnce(log: readonly StoredEvent[]): Violation[] {
  const violations: Violation[] = [];
  const report = (detail: string, executionId: string) =>
    violations.push({ invariant: 'wait-once', detail, executionId });
  // Every ping as delivered: the delivery execution's input is the published event.
  const pings: Array<{ id: string; key: string; publishedAtMs: number }> = [];
  const waits = new Map<string, StoredEvent[]>();
  for (const event of log) {
    if (
      event.type === 'execution.started' &&
      event.executionId.startsWith(`queue:${eventsQueue}:`)
    ) {
      const input = (event.payload as { input?: PublishedEvent<{ key: string }> }).input;
      if (input?.name === 'dst.ping') {
        pings.push({ id: input.id, key: input.data.key, publishedAtMs: input.publishedAtMs });
      }
    }
    if (event.executionId.startsWith(eventWaitPrefix('dst.ping'))) {
      waits.set(event.executionId, [...(waits.get(event.executionId) ?? []), event]);
    }
  }
  for (const [executionId, events] of waits) {
    const started = events.find((event) => event.type === 'execution.started');
    if (started === undefined) continue;
    const input = (started.payload as { input?: { match?: Record<string, unknown> } }).input;
    const key = input?.match?.['data.key'];
    const received = events.filter((event) => event.type === 'signal.received');
    if (received.length > 1) report(`took ${received.length} events, want at most 1`, executionId);
    const taken = (
      received[0]?.payload as { payload?: PublishedEvent<{ key: string }> } | undefined
    )?.payload;
    if (taken !== undefined) {
      if (taken.data.key !== key)
        report(`took ping ${taken.id} of ${taken.data.key}, not ${String(key)}`, executionId);
      if (taken.publishedAtMs < started.at)
        report(`took ping ${taken.id}, published before the wait started`, executionId);
    } else if (events.some((event) => event.type === 'signal.timed_out')) {
      const owed = pings.find(
        (ping) =>
          ping.key === key &&
          ping.publishedAtMs >= started.at &&
          ping.publishedAtMs <= started.at + waitTimeoutMs - waitOwedEndMarginMs,
      );
      if (owed !== undefined)
        report(
          `timed out though ping ${owed.id} of its key was published inside its window`,
          executionId,
        );
    }
  }
  return violations;
}

/**
 * `event-once`: every key published has exactly one run of the triggered flow, started once,
 * and no run exists for anything else (a run per event id, or per delivery, would show here).
 */
function eventStartsOnce(
  plan: PublishedPlan | undefined,
  log: readonly StoredEvent[],
): Violation[] {
  if (plan === undefined) return [];
  const violations: Violation[] = [];
  const prefix = eventRunId('dst.on-event', '');
  const startedBy = new Map<string, number>();
  for (const event of log) {
    if (event.type !== 'execution.started' || !event.executionId.startsWith(prefix)) continue;
    startedBy.set(event.executionId, (startedBy.get(event.executionId) ?? 0) + 1);
  }
  for (const key of plan.keys) {
    const executionId = eventRunId('dst.on-event', key);
    const starts = startedBy.get(executionId) ?? 0;
    if (starts !== 1) {
      violations.push({
        invariant: 'event-once',
        detail: `the run of key ${key} was started ${starts} times, want 1`,
        executionId,
      });
    }
    startedBy.delete(executionId);
  }
  for (const executionId of startedBy.keys()) {
    violations.push({
      invariant: 'event-once',
      detail: 'a run no published key asked for was started',
      executionId,
    });
  }
  return violations;
}

function ids(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}-${index}`);
}
