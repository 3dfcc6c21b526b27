// The log an agent run writes, byte for byte: every event (type, payload, time, hash chain) and
// the run's result, for a few runs that cover the loop's records, compared with a golden file.
// A change to what a run records fails here; when it is meant, rewrite the golden with
// LOOM_UPDATE_GOLDEN=1 and say why in the commit. The golden of the code before records lost
// their start (ADR 0066) is kept: those logs must still replay to the same end.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StoredEvent } from '@loom/event-runtime';
import { StubModel, type StubTurn } from '@loom/reasoning';
import { describe, expect, it } from 'vitest';
import { eventually, harness } from './agent.test-support.js';
import { type Agent, defineAgent, defineTool, type RunResult } from './index.js';

const goldenPath = join(import.meta.dirname, '__golden__', 'agent-logs.golden.jsonl');
/** The same runs' logs as the code wrote them before ADR 0066 (records as step pairs). */
const beforeRecordsPath = join(
  import.meta.dirname,
  '__golden__',
  'agent-logs.before-records.golden.jsonl',
);

const noop = defineTool({
  name: 'noop',
  description: 'Does nothing',
  input: { type: 'object' },
  sideEffect: 'read_only',
  run: async () => 'ok',
});

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks an order up',
  input: {
    type: 'object',
    properties: { order: { type: 'string' }, fields: { type: 'array', items: { type: 'string' } } },
    required: ['order'],
  },
  sideEffect: 'read_only',
  run: async (input: { order: string; fields?: string[] }) => ({
    order: input.order,
    status: 'shipped',
    fields: input.fields ?? [],
    nested: { b: 2, a: [1, 'two', null, { z: true }] },
  }),
});

const broken = defineTool({
  name: 'broken',
  description: 'Always throws',
  input: { type: 'object' },
  sideEffect: 'idempotent',
  run: async () => {
    const error = new Error('the warehouse is closed');
    // The stack is recorded: one without file paths and lines keeps the log the same bytes.
    error.stack = 'Error: the warehouse is closed\n    at the warehouse';
    throw error;
  },
});

const wipe = defineTool({
  name: 'wipe',
  description: 'Deletes everything',
  input: { type: 'object' },
  sideEffect: 'destructive',
  run: async () => 'wiped',
});

const mail = defineTool({
  name: 'send_mail',
  description: 'Sends a mail',
  input: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
  sideEffect: 'remote_mutation',
  run: async () => 'sent',
});

/** A stub answering `turns` in order (the last one forever), its latency read on a frozen clock. */
function scripted(...turns: StubTurn[]): StubModel {
  return new StubModel({
    script: (_request, n) => turns[Math.min(n, turns.length - 1)] as StubTurn,
    clock: { now: () => 0 },
  });
}

function agentOf(name: string, turns: StubTurn[], tools = [noop, lookup, broken, wipe]): Agent {
  return defineAgent({
    name,
    model: scripted(...turns),
    instructions: `You are ${name}. Use the tools, then answer.`,
    tools,
  });
}

/** Runs whose logs are pinned: the fan-out bench's shape and the loop's other records. */
const cases: { name: string; agent: () => Agent; input: string }[] = [
  {
    name: 'fanout',
    agent: () =>
      agentOf('fanout', [{ toolCalls: [{ tool: 'noop', input: {} }] }, { text: 'done' }]),
    input: 'go',
  },
  {
    name: 'parallel-calls',
    agent: () =>
      agentOf('parallel', [
        {
          text: 'Looking.',
          toolCalls: [
            { tool: 'lookup', input: { order: 'A-1', fields: ['status', 'eta'] } },
            { tool: 'lookup', input: { order: 7 } },
            { tool: 'nope', input: {} },
            { tool: 'broken', input: {} },
            { tool: 'wipe', input: { all: true } },
          ],
        },
        { toolCalls: [{ tool: 'lookup', input: { fields: [], order: 'B-2' } }] },
        { text: 'Order A-1 shipped; B-2 too.' },
      ]),
    input: 'Where are orders A-1 and B-2? Ünïcödé ✓',
  },
  {
    name: 'empty-then-fail',
    agent: () =>
      agentOf('quitter', [
        { text: '' },
        { toolCalls: [{ tool: 'fail_goal', input: { reason: 'no such order' } }] },
      ]),
    input: 'find order Z',
  },
  {
    name: 'loop',
    agent: () => agentOf('looper', [{ toolCalls: [{ tool: 'noop', input: { x: 1 } }] }]),
    input: 'spin',
  },
];

interface Pinned {
  result: RunResult;
  log: unknown[];
}

async function pinnedRun(agent: Agent, input: string, runId: string): Promise<Pinned> {
  const { agents, flows, clock } = harness([agent]);
  const result = await clock.runUntilSettled(agents.run(agent, input, { runId }));
  const log = await flows.store.read(runId);
  await flows.shutdown();
  return { result, log };
}

function mailerAgent(): Agent {
  return defineAgent({
    name: 'mailer',
    model: scripted({ toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] }, { text: 'ok' }),
    instructions: 'Mail people.',
    tools: [mail],
  });
}

async function approvalRun(): Promise<Pinned> {
  const mailer = mailerAgent();
  const h = harness([mailer]);
  const run = await h.agents.start(mailer, 'mail ana', { runId: 'run-approval' });
  const approval = await eventually(async () => {
    const pending = await h.agents.approvals('run-approval');
    return pending.find((a) => a.status === 'pending');
  }, 'a pending approval');
  h.clock.advance(1_000);
  await h.agents.approve(approval.id, {
    by: 'ops',
    note: 'fine',
    requestHash: approval.requestHash,
  });
  await h.flows.wakeDue();
  const result = await run.result();
  const log = await h.flows.store.read('run-approval');
  await h.flows.shutdown();
  return { result, log };
}

describe('the log an agent run writes', () => {
  it('is byte for byte the golden one, events, payloads and hashes', async () => {
    const actual: Record<string, Pinned> = {};
    for (const { name, agent, input } of cases) {
      actual[name] = await pinnedRun(agent(), input, `run-${name}`);
    }
    actual.approval = await approvalRun();
    // One line per event and per result: a change shows as the lines it touched.
    const lines: string[] = [];
    for (const [name, { result, log }] of Object.entries(actual)) {
      for (const event of log) lines.push(JSON.stringify({ run: name, event }));
      lines.push(JSON.stringify({ run: name, result }));
    }
    const text = `${lines.join('\n')}\n`;
    if (process.env.LOOM_UPDATE_GOLDEN === '1' || !existsSync(goldenPath)) {
      if (process.env.LOOM_UPDATE_GOLDEN !== '1') {
        throw new Error(`no golden at ${goldenPath}: write it with LOOM_UPDATE_GOLDEN=1`);
      }
      writeFileSync(goldenPath, text);
    }
    const golden = readFileSync(goldenPath, 'utf8');
    // Compared as text: the same events in the same order with the same bytes.
    expect(text).toBe(golden);
  });

  it('logs written before records lost their start (ADR 0066) replay to the same end, calling nothing', async () => {
    const lines = readFileSync(beforeRecordsPath, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { run: string; event?: StoredEvent });
    const agents: Record<string, () => Agent> = { approval: mailerAgent };
    for (const { name, agent } of cases) agents[name] = agent;
    let pairs = 0;
    for (const [name, makeAgent] of Object.entries(agents)) {
      const log = lines.flatMap((line) => (line.run === name && line.event ? [line.event] : []));
      pairs += log.filter(
        (event) =>
          event.type === 'step.started' &&
          /^(policy|start|approval):/.test((event.payload as { name: string }).name),
      ).length;
      const terminal = log.at(-1) as StoredEvent;
      expect(terminal.type, name).toBe('execution.completed');
      const agent = makeAgent();
      const { flows, clock } = harness([agent]);
      // The log up to its end, as the older code wrote it (the store chains it anew).
      await flows.store.append(
        log.slice(0, -1).map(({ executionId, sequence, type, payload }) => ({
          executionId,
          sequence,
          type,
          payload,
        })),
      );
      const handle = await flows.resume(terminal.executionId);
      await clock.runUntilSettled(handle.result());
      const replayed = await flows.store.read(terminal.executionId);
      await flows.shutdown();
      // Nothing new but the end, and the same end: no model call ran again.
      expect(
        replayed.map((event) => [event.type, event.payload]),
        name,
      ).toEqual(log.map((event) => [event.type, event.payload]));
      expect((agent.model as StubModel).calls, name).toBe(0);
    }
    // The old logs do hold records as step pairs (policy, start and approval starts).
    expect(pairs).toBeGreaterThanOrEqual(8);
  });
});
