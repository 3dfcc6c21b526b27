// Text across processes (ADR 0050), in one process: a follower on another agent runtime over the
// same memory backend has no share in the driver's in-process text, so everything it gets comes
// through the backend's live channel. Real clock (the 50 ms flush window); every wait has a deadline.
import { type LiveStore, openMemory } from '@loom/event-runtime';
import { until } from '@loom/event-runtime/testing';
import type { ModelProvider, StubTurn } from '@loom/reasoning';
import { StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { type AgentEvent, type AgentStream, createAgentRuntime, defineAgent } from './index.js';

const deadlineMs = 10_000;
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const thing of opened.splice(0).reverse()) await thing.close();
});

/**
 * A stub whose stream, after text delta `n` of call `c` (both from 0), waits for `gate(c, n)`
 * (if it returns a promise) before going on: the test holds the call open until a follower saw
 * the text, so what the follower saw cannot have come from the recorded answer.
 */
function gated(
  turns: StubTurn[],
  gate: (call: number, delta: number) => Promise<void> | undefined,
): ModelProvider {
  const stub = new StubModel({ script: turns });
  let calls = 0;
  return {
    id: 'gated',
    generate: (request) => stub.generate(request),
    async *stream(request) {
      const call = calls++;
      let n = 0;
      for await (const delta of stub.stream(request)) {
        yield delta;
        if (delta.type === 'text') await gate(call, n++);
      }
    },
  };
}

/** A driver and a follower: two agent runtimes on one memory backend. */
function pair(model: ModelProvider, live?: LiveStore) {
  const backend = openMemory();
  const agent = defineAgent({ name: 'writer', model, instructions: '', tools: [] });
  const driverFlows = createRuntime({
    backend,
    closeBackend: false,
    stepRetry: { attempts: 2, backoff: { initialMs: 1, maxMs: 1 } },
  });
  const drivers = createAgentRuntime({
    flows: driverFlows,
    agents: [agent],
    ...(live === undefined ? {} : { live }),
  });
  const followerFlows = createRuntime({ backend, closeBackend: false });
  const followers = createAgentRuntime({ flows: followerFlows, agents: [] });
  opened.push(
    backend,
    { close: () => driverFlows.shutdown() },
    { close: () => followerFlows.shutdown() },
  );
  return { backend, agent, drivers, followers };
}

/** Takes events until `stop` says so (or the stream ends); bounded by the deadline. */
async function takeUntil(
  stream: AgentStream,
  into: AgentEvent[],
  stop: (event: AgentEvent) => boolean,
): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const next = await Promise.race([
      stream.next(),
      new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), deadline - Date.now())),
    ]);
    if (next === 'late') throw new Error(`no event after ${JSON.stringify(into.at(-1))}`);
    if (next.done === true) return;
    into.push(next.value);
    if (stop(next.value)) return;
  }
}

function textOf(events: readonly AgentEvent[]): string {
  let text = '';
  for (const event of events) {
    if (event.type === 'text_retracted') text = '';
    if (event.type === 'text_delta') {
      expect(event.offset).toBe(text.length);
      text += event.text;
    }
  }
  return text;
}

/** A gate the test opens when the follower has seen `text`. */
function gates() {
  const waiting = new Map<string, () => void>();
  let seen = '';
  return {
    wait(key: string): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`gate ${key} never opened`)), deadlineMs);
        waiting.set(key, () => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
    /** The follower saw `text` so far: opens the gates whose keys it contains. */
    saw(text: string): void {
      seen = text;
      for (const [key, open] of waiting) {
        if (seen.includes(key)) {
          waiting.delete(key);
          open();
        }
      }
    },
  };
}

describe('text across agent runtimes, through the live channel', () => {
  it("a follower gets every piece of another runtime's model call once, in order, while the call runs", async () => {
    const answer = 'alpha beta gamma delta epsilon';
    const gate = gates();
    // After each word but the last, the call waits until the follower has shown that word.
    const words = answer.split(' ');
    const model = gated([{ text: answer }], (_call, n) =>
      n < words.length - 1 ? gate.wait(words[n] as string) : undefined,
    );
    const { agent, drivers, followers, backend } = pair(model);
    const stream = followers.stream('r1');
    const run = drivers.run(agent, 'write', { runId: 'r1' });
    const events: AgentEvent[] = [];
    await takeUntil(stream, events, (event) => {
      gate.saw(textOf(events));
      return event.type === 'finished';
    });
    const result = await run;
    expect(result).toMatchObject({ reason: 'goal_completed', output: answer });
    expect(textOf(events)).toBe(answer);
    const types = events.map((e) => e.type);
    expect(types).not.toContain('text_retracted');
    // Live, between the turn's start and its recorded answer.
    const responded = types.indexOf('model_responded');
    expect(types.indexOf('text_delta')).toBe(types.indexOf('turn_started') + 1);
    expect(types.lastIndexOf('text_delta')).toBe(responded - 1);
    expect(events.filter((e) => e.type === 'text_delta').length).toBeGreaterThan(1);
    // The driver dropped the turn's chunks once its answer was recorded.
    await until(
      async () => (await backend.live.read('r1', 'decide:1')).length === 0,
      'the chunks of decide:1 to be dropped',
      deadlineMs,
    );
  });

  it('a retried call retracts the text of the attempt that failed, then shows the one recorded', async () => {
    const gate = gates();
    const model = gated(
      [
        { text: 'Hello wor', fail: { code: 'MODEL_UNAVAILABLE', afterDeltas: 2 } },
        { text: 'Goodbye now' },
      ],
      // The failing attempt waits until the follower has shown its text, then fails.
      (call, n) => (call === 0 && n === 1 ? gate.wait('Hello wor') : undefined),
    );
    const { agent, drivers, followers } = pair(model);
    const stream = followers.stream('r2');
    const run = drivers.run(agent, 'write', { runId: 'r2' });
    const events: AgentEvent[] = [];
    await takeUntil(stream, events, (event) => {
      gate.saw(textOf(events));
      return event.type === 'finished';
    });
    expect((await run).output).toBe('Goodbye now');
    const retracted = events.find((e) => e.type === 'text_retracted');
    expect(retracted).toMatchObject({ turn: 1, length: 'Hello wor'.length });
    const before = events.slice(0, events.indexOf(retracted as AgentEvent));
    expect(textOf(before)).toBe('Hello wor');
    expect(textOf(events)).toBe('Goodbye now');
  });

  it('a stream resumed from its cursor goes on where it stopped: no event and no text twice', async () => {
    const answer = 'one two three four five six';
    const gate = gates();
    const model = gated([{ text: answer }], (_call, n) =>
      n === 2 ? gate.wait('three') : undefined,
    );
    const { agent, drivers, followers } = pair(model);
    const first = followers.stream('r3');
    const run = drivers.run(agent, 'write', { runId: 'r3' });
    const events: AgentEvent[] = [];
    await takeUntil(first, events, () => textOf(events).includes('three'));
    const cursor = first.cursor;
    await first.close();
    // Another runtime's stream, from the cursor (a reconnect that lands on another server).
    const second = followers.stream('r3', { after: cursor });
    gate.saw('three');
    await takeUntil(second, events, (event) => event.type === 'finished');
    await run;
    expect(textOf(events)).toBe(answer);
    const sequences = events.flatMap((e) => (e.sequence === undefined ? [] : [e.sequence]));
    expect(new Set(sequences).size).toBe(sequences.length);
    expect(events.filter((e) => e.type === 'turn_started')).toHaveLength(1);
    expect(() => followers.stream('r3', { after: 'not a cursor' })).toThrow(/not a stream cursor/);
  });

  it('writes nothing for calls that end within the flush window, and coalesces bursts of a slow one', async () => {
    const calls = { write: 0, drop: 0 };
    const backend = openMemory();
    opened.push(backend);
    const inner = backend.live;
    const counting: LiveStore = {
      backend: 'memory',
      write: (chunk) => {
        calls.write++;
        return inner.write(chunk);
      },
      read: (...args) => inner.read(...args),
      watch: (...args) => inner.watch(...args),
      drop: (...args) => {
        calls.drop++;
        return inner.drop(...args);
      },
      prune: (beforeMs) => inner.prune(beforeMs),
      close: () => inner.close(),
    };
    // Three instant answers (tool-free turns of three runs): nobody waits, nothing is written.
    const fast = defineAgent({
      name: 'fast',
      model: new StubModel({ script: [{ text: 'a quick answer of several words' }] }),
      instructions: '',
      tools: [],
    });
    const flows = createRuntime({ backend, closeBackend: false });
    opened.push({ close: () => flows.shutdown() });
    const agents = createAgentRuntime({ flows, agents: [fast], live: counting });
    for (const runId of ['f1', 'f2', 'f3']) await agents.run(fast, 'go', { runId });
    expect(calls).toEqual({ write: 0, drop: 0 });

    // Two bursts of 20 words, the second once the first is in the store.
    const burst = Array.from({ length: 40 }, (_, n) => `w${n}`).join(' ');
    const gate = gates();
    const slow = defineAgent({
      name: 'slow',
      model: gated([{ text: burst }], (_call, n) => (n === 19 ? gate.wait('w19') : undefined)),
      instructions: '',
      tools: [],
    });
    const slowAgents = createAgentRuntime({ flows, agents: [slow], live: counting });
    const run = slowAgents.run(slow, 'go', { runId: 's1' });
    await until(
      async () => (await inner.read('s1', 'decide:1')).some((c) => c.text.includes('w19')),
      'the first burst in the live store',
      deadlineMs,
    );
    gate.saw('w19');
    expect((await run).output).toBe(burst);
    await until(() => calls.drop === 1, 'the drop of decide:1', deadlineMs);
    // The first burst waited out the window: one write. The second ended the call within it:
    // nothing (followers complete it from the recorded answer).
    expect(calls.write).toBe(1);
  });
});
