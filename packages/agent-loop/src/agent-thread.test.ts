import { EventType, InMemoryEventStore, openMemory } from '@loom/event-runtime';
import type { ModelRequest, StubTurn } from '@loom/reasoning';
import { createRuntime, type Runtime } from '@loom/workflow-runtime';
import { describe, expect, it } from 'vitest';
import { eventually, harness, stubBy } from './agent.test-support.js';
import { durableBackends } from './durable-backends.test-support.js';
import {
  type Agent,
  type AgentRuntime,
  createAgentRuntime,
  defineAgent,
  defineTool,
  isLoomError,
  type ThreadBusy,
} from './index.js';

const { backends } = durableBackends('agent_thread');

/** The user messages of a request, oldest first. */
function userTexts(request: ModelRequest | undefined): string[] {
  return (request?.messages ?? []).flatMap((m) => (m.role === 'user' ? [m.content] : []));
}

/**
 * A chat agent: a message starting with 'look' first calls the read_only `lookup` tool; every
 * answer replies `re: <the message> (<n> earlier)`, n the user messages before it in the prompt.
 */
function chatAgent(
  requests: ModelRequest[],
  options: { busy?: ThreadBusy; gate?: Promise<void>; budgetTokens?: number; name?: string } = {},
): Agent {
  const lookup = defineTool({
    name: 'lookup',
    description: 'Look a word up',
    input: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
    sideEffect: 'read_only',
    run: async (input) => {
      await options.gate;
      return { meaning: `the meaning of ${(input as { word: string }).word}` };
    },
  });
  return defineAgent({
    name: options.name ?? 'chat',
    model: stubBy((_n, request): StubTurn => {
      requests.push(request);
      const users = userTexts(request);
      const last = users.at(-1) ?? '';
      const answered = request.messages.at(-1)?.role === 'tool';
      if (last.startsWith('look') && !answered) {
        return { toolCalls: [{ tool: 'lookup', input: { word: last.slice(5) } }] };
      }
      return { text: `re: ${last} (${users.length - 1} earlier)` };
    }),
    instructions: 'Chat with the user.',
    tools: [lookup],
    ...(options.budgetTokens === undefined ? {} : { budgetTokens: options.budgetTokens }),
    ...(options.busy === undefined ? {} : { thread: { busy: options.busy } }),
  });
}

/** A conversation of three messages, one of them with a tool call: the contract every backend holds. */
async function converse(
  flows: Runtime,
  agents: AgentRuntime,
  chat: Agent,
  requests: ModelRequest[],
): Promise<void> {
  const thread = agents.thread(chat, 'chat-1');
  const first = await thread.send('hello');
  expect(first).toMatchObject({ threadId: 'chat-1', message: 1, runId: 'chat-1/1' });
  expect((await first.result()).output).toBe('re: hello (0 earlier)');
  const second = await thread.send('look loom');
  expect((await second.result()).output).toBe('re: look loom (1 earlier)');
  const third = await agents.send(chat, 'chat-1', 'thanks');
  const reply = await third.result();
  expect(reply).toMatchObject({
    runId: 'chat-1/3',
    reason: 'goal_completed',
    output: 're: thanks (2 earlier)',
  });

  // The third turn's prompt: the instructions, the two earlier exchanges whole (the tool call
  // with its result), then the message.
  const prompt = requests.at(-1)?.messages ?? [];
  expect(prompt.map((m) => m.role)).toEqual([
    'system',
    'user',
    'assistant',
    'user',
    'assistant',
    'tool',
    'assistant',
    'user',
  ]);
  expect(prompt[5]).toMatchObject({ role: 'tool', tool: 'lookup' });
  expect(prompt[5]?.content).toContain('the meaning of loom');

  const messages = await thread.messages();
  expect(messages.map((m) => [m.message, m.role])).toEqual([
    [1, 'user'],
    [1, 'assistant'],
    [2, 'user'],
    [2, 'assistant'],
    [2, 'tool'],
    [2, 'assistant'],
    [3, 'user'],
    [3, 'assistant'],
  ]);
  expect(messages.at(-1)).toMatchObject({
    role: 'assistant',
    runId: 'chat-1/3',
    text: 're: thanks (2 earlier)',
  });
  // Each message is its own run: the thread's log starts the three turns as children, once each.
  const log = await flows.store.read('chat-1');
  expect(log.filter((e) => e.type === EventType.childStarted)).toHaveLength(3);
  expect(await flows.status('chat-1/3')).toBe('completed');
}

/** What a turn's `thread:superseded` record says, or undefined when it has none. */
async function supersededRecord(flows: Runtime, runId: string): Promise<unknown> {
  const record = (await flows.store.read(runId)).find(
    (e) =>
      e.type === EventType.stepCompleted &&
      (e.payload as { name?: unknown }).name === 'thread:superseded',
  );
  return (record?.payload as { result?: unknown } | undefined)?.result;
}

/**
 * busy 'interrupt' with messages queued behind turns that have not started: three messages are
 * sent by a runtime that runs nothing (handOffStarts, no timer poll, no recovery), so no turn
 * exists when the second and third arrive; then a driver runtime on the same store runs the
 * thread. Each message takes the place of the one before it: turns 1 and 2 end without a model
 * call, and the third is answered with both earlier messages in its history.
 */
async function supersedeBeforeStart(sender: Runtime, startDriver: () => Runtime): Promise<void> {
  const requests: ModelRequest[] = [];
  const chat = chatAgent(requests, { busy: 'interrupt' });
  const thread = createAgentRuntime({ flows: sender, agents: [chat] }).thread(chat, 'double');
  const first = await thread.send('hello');
  const second = await thread.send('are you there?');
  const third = await thread.send('answer this one');
  // No turn has started: the sender found none to cancel.
  for (const runId of ['double/1', 'double/2', 'double/3']) {
    expect(await sender.store.read(runId), runId).toEqual([]);
  }

  const driver = startDriver();
  createAgentRuntime({ flows: driver, agents: [chat] });
  expect(await first.result()).toMatchObject({
    reason: 'operator_cancelled',
    error: 'interrupted by message 2 of thread double before it started',
    turns: 0,
  });
  expect(await second.result()).toMatchObject({
    reason: 'operator_cancelled',
    error: 'interrupted by message 3 of thread double before it started',
    turns: 0,
  });
  expect(await third.result()).toMatchObject({
    reason: 'goal_completed',
    output: 're: answer this one (2 earlier)',
  });
  // One model call in all, whose prompt has the two messages it replaced, unanswered.
  expect(requests).toHaveLength(1);
  expect(requests[0]?.messages.map((m) => m.role)).toEqual(['system', 'user', 'user', 'user']);
  expect(userTexts(requests[0])).toEqual(['hello', 'are you there?', 'answer this one']);
  expect((await thread.messages()).map((m) => [m.message, m.role])).toEqual([
    [1, 'user'],
    [2, 'user'],
    [3, 'user'],
    [3, 'assistant'],
  ]);
  // Each turn recorded what it found, so a replay decides the same.
  expect(await supersededRecord(driver, 'double/1')).toBe(true);
  expect(await supersededRecord(driver, 'double/2')).toBe(true);
  expect(await supersededRecord(driver, 'double/3')).toBe(false);
}

/** The sender of {@link supersedeBeforeStart}: it writes messages and runs nothing. */
const sendsOnly = { handOffStarts: true, timerPollMs: 0, recoverEveryMs: 0 } as const;

describe('threads on the memory store', () => {
  it('a conversation: each message a run, the earlier exchanges in its prompt, messages() in order', async () => {
    const requests: ModelRequest[] = [];
    const chat = chatAgent(requests);
    const { flows, agents } = harness([chat]);
    await converse(flows, agents, chat, requests);
  });

  it('history is trimmed to the budget: the oldest exchanges drop whole, the message and instructions stay', async () => {
    const requests: ModelRequest[] = [];
    const chat = chatAgent(requests, { budgetTokens: 140 });
    const { agents } = harness([chat]);
    const thread = agents.thread(chat, 'long');
    for (let i = 1; i <= 8; i++) {
      await (await thread.send(`message number ${i} ${'x'.repeat(40)}`)).result();
    }
    const prompt = requests.at(-1)?.messages ?? [];
    const users = userTexts(requests.at(-1));
    expect(prompt[0]).toMatchObject({ role: 'system', content: 'Chat with the user.' });
    expect(users.at(-1)).toContain('message number 8');
    // Fewer than the seven earlier exchanges fit, and those kept are the newest, in order.
    expect(users.length).toBeGreaterThan(1);
    expect(users.length).toBeLessThan(8);
    const kept = users.slice(0, -1).map((text) => Number(/number (\d)/.exec(text)?.[1]));
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => 8 - kept.length + i));
    // Every kept user message is followed by its reply: no exchange is cut.
    expect(prompt.filter((m) => m.role === 'assistant')).toHaveLength(users.length - 1);
  });

  it("busy 'queue': a message sent while a turn runs is answered after it, in order, with it in its history", async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const requests: ModelRequest[] = [];
    const chat = chatAgent(requests, { busy: 'queue', gate });
    const { flows, agents } = harness([chat]);
    const thread = agents.thread(chat, 'q');
    const first = await thread.send('look slowly');
    await eventually(
      async () => (requests.length > 0 ? true : undefined),
      'the first turn to call its tool',
    );
    const second = await thread.send('and then?');
    expect(second.message).toBe(2);
    expect(await flows.status('q/1')).toBe('running');
    open();
    expect((await first.result()).output).toBe('re: look slowly (0 earlier)');
    expect((await second.result()).output).toBe('re: and then? (1 earlier)');
  });

  it('activeTurn is the newest message’s turn while it has not ended (queued counts), then none; turn(n) reads any turn', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const requests: ModelRequest[] = [];
    const chat = chatAgent(requests, { busy: 'queue', gate });
    const other = chatAgent([], { name: 'other' });
    const { agents } = harness([chat, other]);
    const thread = agents.thread(chat, 'active');
    expect(await thread.activeTurn()).toBeUndefined(); // no thread yet
    await thread.send('look slowly');
    await eventually(
      async () => (requests.length > 0 ? true : undefined),
      'the first turn to call its tool',
    );
    expect((await thread.activeTurn())?.runId).toBe('active/1');
    await thread.send('and then?'); // queued behind turn 1
    expect((await thread.activeTurn())?.runId).toBe('active/2');
    open();
    expect((await thread.turn(2).result()).output).toBe('re: and then? (1 earlier)');
    expect(await thread.activeTurn()).toBeUndefined();
    expect((await thread.turn(1).result()).output).toBe('re: look slowly (0 earlier)');
    expect(() => thread.turn(0)).toThrow(/a message number is a whole number from 1/);
    // Another agent's thread is refused, as send refuses it.
    await expect(agents.thread(other, 'active').activeTurn()).rejects.toThrow(
      /'active' is not a thread of agent 'other'/,
    );
  });

  it("busy 'reject': a message sent while a turn runs is THREAD_BUSY, names the thread and records nothing", async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const requests: ModelRequest[] = [];
    const chat = chatAgent(requests, { busy: 'reject', gate });
    const { flows, agents } = harness([chat]);
    const thread = agents.thread(chat, 'r');
    const first = await thread.send('look slowly');
    let error: unknown;
    try {
      await thread.send('are you there?');
    } catch (caught) {
      error = caught;
    }
    expect(isLoomError(error, 'THREAD_BUSY')).toBe(true);
    expect((error as { fields: unknown }).fields).toEqual({
      threadId: 'r',
      runId: 'r/1',
      text: 'are you there?',
    });
    expect(
      (await flows.store.readSignals('r')).filter((s) => s.name === 'thread:message'),
    ).toHaveLength(1);
    open();
    expect((await first.result()).output).toBe('re: look slowly (0 earlier)');
    // Once the turn has ended, the same message is taken, as message 2.
    const again = await thread.send('are you there?');
    expect(again.message).toBe(2);
    expect((await again.result()).output).toBe('re: are you there? (1 earlier)');
  });

  it("busy 'interrupt': a message sent while a turn runs cancels it and is answered with the interrupted turn in its history", async () => {
    const never = new Promise<void>(() => {});
    const requests: ModelRequest[] = [];
    const chat = chatAgent(requests, { busy: 'interrupt', gate: never });
    const { agents } = harness([chat]);
    const thread = agents.thread(chat, 'i');
    const first = await thread.send('look forever');
    await eventually(
      async () => (requests.length > 0 ? true : undefined),
      'the first turn to call its tool',
    );
    const second = await thread.send('stop, answer this');
    const interrupted = await first.result();
    expect(interrupted.reason).toBe('operator_cancelled');
    expect(interrupted.error).toContain('interrupted by message 2 of thread i');
    expect((await second.result()).output).toBe('re: stop, answer this (1 earlier)');
    // The interrupted turn's call is in the history with an observation, never alone.
    const prompt = requests.at(-1)?.messages ?? [];
    expect(prompt.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(prompt[3]).toMatchObject({ role: 'tool', isError: true });
  });

  it("busy 'interrupt': messages queued behind turns that have not started take their places; only the last is answered", async () => {
    const backend = openMemory();
    const sender = createRuntime({ backend, closeBackend: false, ...sendsOnly });
    const drivers: Runtime[] = [];
    try {
      await supersedeBeforeStart(sender, () => {
        const driver = createRuntime({ backend, closeBackend: false, timerPollMs: 20 });
        drivers.push(driver);
        return driver;
      });
    } finally {
      for (const driver of drivers) await driver.shutdown();
      await sender.shutdown();
      await backend.close();
    }
  });

  it("busy 'queue' in the same place answers every message, and records no supersession", async () => {
    const backend = openMemory();
    const sender = createRuntime({ backend, closeBackend: false, ...sendsOnly });
    const driver = createRuntime({ backend, closeBackend: false, timerPollMs: 20 });
    try {
      const requests: ModelRequest[] = [];
      const chat = chatAgent(requests);
      const thread = createAgentRuntime({ flows: sender, agents: [chat] }).thread(chat, 'q');
      const turns = [await thread.send('hello'), await thread.send('are you there?')];
      createAgentRuntime({ flows: driver, agents: [chat] });
      expect((await turns[0]?.result())?.output).toBe('re: hello (0 earlier)');
      expect((await turns[1]?.result())?.output).toBe('re: are you there? (1 earlier)');
      expect(requests).toHaveLength(2);
      expect(await supersededRecord(driver, 'q/1')).toBeUndefined();
    } finally {
      await driver.shutdown();
      await sender.shutdown();
      await backend.close();
    }
  });

  it("a thread started under one agent version goes on under the next: its loop is not the agent's version", async () => {
    const store = new InMemoryEventStore();
    const v1 = defineAgent({
      name: 'chat',
      version: '1',
      model: stubBy(() => ({ text: 'from v1' })),
      instructions: 'x',
      tools: [],
    });
    const before = createRuntime({ store });
    const first = await createAgentRuntime({ flows: before, agents: [v1] }).send(
      v1,
      'deploy',
      'hello',
    );
    expect((await first.result()).output).toBe('from v1');
    await before.shutdown();
    const v2 = defineAgent({
      name: 'chat',
      version: '2',
      model: stubBy(() => ({ text: 'from v2' })),
      instructions: 'x',
      tools: [],
    });
    // The next process on the store, booted as the docs say (recover first). The thread may have
    // been between its turn's end and its next wait when the first one stopped: alone on the
    // store, this one takes it over at once (a dead node is confirmed on a later recovery round:
    // rounds every 50 ms instead of 5 s).
    const after = createRuntime({ store, timerPollMs: 20, recoverQuietMs: 0, recoverEveryMs: 50 });
    await after.recover();
    try {
      const second = await createAgentRuntime({ flows: after, agents: [v2] }).send(
        v2,
        'deploy',
        'again',
      );
      expect(second.message).toBe(2);
      expect((await second.result()).output).toBe('from v2');
    } finally {
      await after.shutdown();
    }
  });

  it('a messageId sent again returns the same turn; errors name the problem', async () => {
    const chat = chatAgent([]);
    const { agents } = harness([chat]);
    const thread = agents.thread(chat, 'ids');
    const first = await thread.send('hello', { messageId: 'client-1' });
    const again = await thread.send('hello', { messageId: 'client-1' });
    expect(again.runId).toBe(first.runId);
    expect((await thread.messages()).filter((m) => m.role === 'user')).toHaveLength(1);
    expect(() => agents.thread(chat, 'a/b')).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    const other = defineAgent({
      name: 'other',
      model: stubBy(() => ({ text: 'x' })),
      instructions: 'x',
      tools: [],
    });
    expect(() => agents.thread(other, 't')).toThrow(
      expect.objectContaining({ code: 'AGENT_NOT_REGISTERED' }),
    );
    expect(() =>
      defineAgent({
        name: 'bad',
        model: stubBy(() => ({ text: 'x' })),
        instructions: 'x',
        tools: [],
        thread: { busy: 'drop' as ThreadBusy },
      }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

/**
 * Two senders at once on an idle thread: with 'reject', exactly one message is taken and the
 * other is THREAD_BUSY (the signal's idempotency key numbers the message: one wins the number);
 * with 'queue', both are taken, numbered 1 and 2, and both answered.
 */
async function twoSenders(agents: AgentRuntime, chat: Agent, rejecting: Agent): Promise<void> {
  const raced = await Promise.allSettled([
    agents.send(rejecting, 'race-r', 'one'),
    agents.send(rejecting, 'race-r', 'two'),
  ]);
  const taken = raced.filter((r) => r.status === 'fulfilled');
  const refused = raced.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
  expect(taken).toHaveLength(1);
  expect(refused).toHaveLength(1);
  expect(isLoomError(refused[0], 'THREAD_BUSY'), String(refused[0]?.stack ?? refused[0])).toBe(
    true,
  );
  expect(
    (await agents.thread(rejecting, 'race-r').messages()).filter((m) => m.role === 'user'),
  ).toHaveLength(1);

  const queued = await Promise.all([
    agents.send(chat, 'race-q', 'one'),
    agents.send(chat, 'race-q', 'two'),
  ]);
  expect(queued.map((t) => t.message).sort()).toEqual([1, 2]);
  const users = (await agents.thread(chat, 'race-q').messages()).filter((m) => m.role === 'user');
  expect(users.map((m) => m.message)).toEqual([1, 2]);
  expect(users.map((m) => m.text).sort()).toEqual(['one', 'two']);
  // Each is answered in its number's place: the first with nothing before it, the second after it.
  for (const turn of queued) {
    const text = users.find((m) => m.message === turn.message)?.text;
    expect((await turn.result()).output).toBe(`re: ${text} (${turn.message - 1} earlier)`);
  }
}

describe.each(backends)('threads on %s', (_backend, openStore) => {
  it('a conversation: each message a run, the earlier exchanges in its prompt, messages() in order', async () => {
    const store = await openStore('converse');
    const flows = createRuntime({ store });
    try {
      const requests: ModelRequest[] = [];
      const chat = chatAgent(requests);
      await converse(flows, createAgentRuntime({ flows, agents: [chat] }), chat, requests);
    } finally {
      await flows.shutdown();
      await store.close();
    }
  });

  it("busy 'interrupt': messages queued behind turns that have not started take their places; only the last is answered", async () => {
    const store = await openStore('supersede');
    const sender = createRuntime({ store, ...sendsOnly });
    const drivers: Runtime[] = [];
    try {
      await supersedeBeforeStart(sender, () => {
        const driver = createRuntime({ store, timerPollMs: 20 });
        drivers.push(driver);
        return driver;
      });
    } finally {
      for (const driver of drivers) await driver.shutdown();
      await sender.shutdown();
      await store.close();
    }
  });

  it('two senders at once: reject takes one and refuses the other, queue takes both in order', async () => {
    const store = await openStore('race');
    const flows = createRuntime({ store });
    try {
      const chat = chatAgent([]);
      const rejecting = chatAgent([], { busy: 'reject', name: 'chat-r' });
      await twoSenders(createAgentRuntime({ flows, agents: [chat, rejecting] }), chat, rejecting);
    } finally {
      await flows.shutdown();
      await store.close();
    }
  });
});
