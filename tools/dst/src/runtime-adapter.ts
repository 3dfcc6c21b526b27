// The one file that calls the runtime's API: when a runtime export is renamed or moved, this is
// the file to change.
import type { Clock, EventStore, LeaseStore, QueueStore } from '@loom/event-runtime';
import {
  createRuntime,
  type Runtime,
  type UpdateDefinition,
  type WorkflowDefinition,
} from '@loom/workflow-runtime';

/** A flow the simulation can run: what `defineFlow` returns. */
export type SimFlow = WorkflowDefinition<never, unknown>;

/** The runtime settings of every simulated node: short leases so pauses outlive them. */
export const simRuntimeSettings = {
  leaseTtlMs: 3_000,
  timerPollMs: 500,
  recoverEveryMs: 2_000,
  storeRetryDelayMs: 50,
  storeRetryDelayMaxMs: 1_000,
} as const;

/** What a simulated node needs from a runtime. */
export interface SimRuntime {
  readonly nodeId: string;
  /** The node's real flow runtime, for what runs on top of it (an agent runtime). */
  readonly flows: Runtime;
  start(flow: SimFlow, input: unknown, executionId: string): Promise<void>;
  signal(
    executionId: string,
    name: string,
    payload: unknown,
    idempotencyKey: string,
  ): Promise<void>;
  enqueue(queue: string, flow: SimFlow, input: unknown, itemId: string): Promise<void>;
  /** Publishes an event (ADR 0060): durable when it resolves, a repeated id is a no-op. */
  publish(name: string, data: unknown, id: string): Promise<void>;
  /** Sends an update (ADR 0061) under `updateId` and resolves with the flow's answer. */
  update(
    update: UpdateDefinition<string, never, unknown>,
    executionId: string,
    arg: unknown,
    updateId: string,
  ): Promise<unknown>;
  work(queue: string, options: { concurrencyMax: number }): { stop(): Promise<void> };
  schedule(flow: SimFlow, expression: string, name: string): Promise<void>;
  recover(): Promise<void>;
  shutdown(): Promise<void>;
}

/** What a node hands the adapter: its id, its clock and its simulated store handles. */
export interface SimRuntimeOptions {
  nodeId: string;
  clock: Clock;
  store: EventStore;
  leases: LeaseStore;
  queues: QueueStore;
  flows: readonly SimFlow[];
  onError: (error: unknown) => void;
  /** The runtime's `handOffStarts`: its starts are written due, for any node's timer poll. */
  handOffStarts: boolean;
}

/** Builds a node's runtime: the real flow runtime over the node's simulated stores. */
export function createSimRuntime(options: SimRuntimeOptions): SimRuntime {
  const runtime: Runtime = createRuntime({
    ...simRuntimeSettings,
    nodeId: options.nodeId,
    clock: options.clock,
    store: options.store,
    leases: options.leases,
    queues: options.queues,
    flows: options.flows,
    onError: options.onError,
    handOffStarts: options.handOffStarts,
    // The events worker of a node with triggered flows: polls like the queue workers.
    eventDelivery: { pollMs: 500, claimTtlMs: 3_000 },
  });
  return {
    nodeId: options.nodeId,
    flows: runtime,
    start: async (flow, input, executionId) => {
      await runtime.start(flow, input as never, { executionId });
    },
    signal: async (executionId, name, payload, idempotencyKey) => {
      await runtime.signal(executionId, name, payload, { idempotencyKey });
    },
    enqueue: async (queue, flow, input, itemId) => {
      await runtime.enqueue(queue, flow, input as never, { itemId });
    },
    publish: async (name, data, id) => {
      await runtime.publish({ name, data: data as never, id });
    },
    update: (update, executionId, arg, updateId) =>
      runtime.update(update, executionId, arg as never, { updateId }),
    work: (queue, { concurrencyMax }) =>
      runtime.work(queue, { concurrencyMax, pollMs: 500, claimTtlMs: 3_000 }),
    schedule: async (flow, expression, name) => {
      await runtime.schedule(flow, expression, { name, overlap: 'allow', catchUp: 'all' });
    },
    recover: async () => {
      await runtime.recover();
    },
    shutdown: () => runtime.shutdown(),
  };
}

/**
 * A lone runtime on `store` and `clock` with no faults and no other node: what replays a log the
 * simulation wrote, to check that the code reproduces it.
 */
export function createReplayRuntime(options: { store: EventStore; clock: Clock }): Runtime {
  return createRuntime({ store: options.store, clock: options.clock, timerPollMs: 500 });
}
