// Shared set-up of the agent-loop unit tests: a flow runtime on the memory store and a
// ManualClock, stub models, and a bounded wait.
import type { JsonValue } from '@loom/event-runtime';
import { InMemoryEventStore } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { type ModelRequest, StubModel, type StubTurn } from '@loom/reasoning';
import { createRuntime, type Runtime } from '@loom/workflow-runtime';
import { type Agent, type AgentRuntime, createAgentRuntime } from './index.js';

export interface Harness {
  clock: ManualClock;
  flows: Runtime;
  agents: AgentRuntime;
}

export function harness(agents: readonly Agent[], clock = new ManualClock()): Harness {
  const flows = createRuntime({ store: new InMemoryEventStore({ clock }), clock });
  return { clock, flows, agents: createAgentRuntime({ flows, agents }) };
}

/** A stub whose answer at call `n` is `turns[n]`, and the last one forever after. */
export function scripted(...turns: StubTurn[]): StubModel {
  return new StubModel({
    script: (_request, n) => turns[Math.min(n, turns.length - 1)] as StubTurn,
  });
}

/** A stub answering by a function of the call index (from 0). */
export function stubBy(answer: (n: number, request: ModelRequest) => StubTurn): StubModel {
  return new StubModel({ script: (request, n) => answer(n, request) });
}

/** Polls `probe` (real time, bounded: 5 s unless `deadlineMs`) until it returns something other than undefined. */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  deadlineMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The text of every message of a request, for asserting what the model was shown. */
export function shown(request: ModelRequest | undefined): string {
  return JSON.stringify(request?.messages ?? []);
}

export type { JsonValue };
