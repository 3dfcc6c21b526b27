// `loom replay` (the CLI in process; the built binary where its exit is the subject): logs
// recorded by a real runtime (SQLite file and Postgres) re-folded with the flows as deployed (ok,
// exit 0) and with changed code (a renamed step: NON_DETERMINISM; a changed output: the ending
// differs; exit 1), from the database by id and from a file `loom export` wrote. Nothing is written to the database, and no effect runs.
// The same for an agent run (`--flows` exporting the agent): as deployed it fits, with a renamed
// tool it diverges.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Agent, createAgentRuntime } from '@loom/agent-loop';
import type { StoredEvent } from '@loom/event-runtime';
import { createRuntime, type WorkflowDefinition } from '@loom/workflow-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReplayReport, replayLog } from '../src/index.js';
import { dbTargets } from './db-targets.js';
import { eventually, loom, loomInProcess } from './fixture.js';

const { dir, targets, cleanup } = dbTargets('view-replay');
const module = (name: string) => fileURLToPath(new URL(`./replay/${name}`, import.meta.url));
afterAll(cleanup);

describe.each(targets)('loom replay on $name', (target) => {
  const env = { LOOM_DB: target.db };
  const replay = async (args: string[], run = loomInProcess) => {
    const out = await run(['replay', ...args, '--json'], env);
    return { code: out.code, stderr: out.stderr, report: JSON.parse(out.stdout) as ReplayReport };
  };
  let eventsBefore = 0;
  const countEvents = async () => {
    const out = await loomInProcess(['events', 'order-1', '--json'], env);
    const waiting = await loomInProcess(['events', 'wait-1', '--json'], env);
    return JSON.parse(out.stdout).length + JSON.parse(waiting.stdout).length;
  };

  beforeAll(async () => {
    // The flows as deployed, from the module `--flows` loads.
    const { order, waiter } = (await import(module('flows-v1.mjs'))) as Record<
      'order' | 'waiter',
      WorkflowDefinition
    >;
    const backend = await target.open();
    const flows = createRuntime({ backend, flows: [order, waiter] });
    try {
      await (await flows.start(order, { id: 'o1' }, { executionId: 'order-1' })).result();
      await flows.start(waiter, null, { executionId: 'wait-1' });
      await eventually(async () => {
        const rows = await backend.events.findExecutions({ status: 'suspended' });
        return rows.some((r) => r.executionId === 'wait-1') ? true : undefined;
      }, 'wait-1 suspended');
    } finally {
      await flows.shutdown();
    }
    eventsBefore = await countEvents();
  });

  it('the flows as deployed fit both logs: exit 0, and the waiting run would suspend again', async () => {
    const done = await replay(['order-1', '--flows', module('flows-v1.mjs')]);
    expect(done.code).toBe(0);
    expect(done.report).toMatchObject({
      executionId: 'order-1',
      flow: 'order',
      recordedEvents: 6,
      ok: true,
    });
    const waiting = await replay(['wait-1', '--flows', module('flows-v1.mjs')]);
    expect(waiting.code).toBe(0);
    expect(waiting.report.ok).toBe(true);
    expect(waiting.report.next?.map((e) => e.type)).toEqual(['execution.suspended']);
    expect(await countEvents()).toBe(eventsBefore);
  });

  it('a module that leaves a handle open (a timer) does not keep loom replay from exiting with its code', async () => {
    // The built binary as a child process: its exit is the subject.
    const done = await replay(['order-1', '--flows', module('flows-v1-open-handle.mjs')], loom);
    expect(done.code).toBe(0);
    expect(done.report).toMatchObject({ executionId: 'order-1', ok: true });
    const diverged = await replay(['order-1', '--flows', module('flows-v2-renamed.mjs')], loom);
    expect(diverged.code).toBe(1);
  });

  it('a TypeScript module (loaded through tsx, its .ts imports too) fits like the built one', async () => {
    const done = await replay(['order-1', '--flows', module('flows-v1.ts')]);
    expect(done.code, done.stderr).toBe(0);
    expect(done.report).toMatchObject({ executionId: 'order-1', flow: 'order', ok: true });
  });

  it('a renamed step is NON_DETERMINISM at the step, in a finished and in a waiting run: exit 1', async () => {
    for (const id of ['order-1', 'wait-1']) {
      const out = await replay([id, '--flows', module('flows-v2-renamed.mjs')]);
      expect(out.code).toBe(1);
      expect(out.report.ok).toBe(false);
      expect(out.report.divergence?.message).toMatch(/quote|get-ready/);
      expect(out.report.divergence?.replayed?.type).toBe('execution.failed');
      // Where they part: the recorded step.started of operation 0 (sequence 1).
      expect(out.report.divergence?.sequence).toBe(1);
      expect(out.report.divergence?.recorded?.type).toBe('step.started');
    }
    const human = await loomInProcess(
      ['replay', 'order-1', '--flows', module('flows-v2-renamed.mjs')],
      env,
    );
    expect(human.stdout).toMatch(/^DIVERGED: order-1 \(order\) at sequence 1: /);
    expect(await countEvents()).toBe(eventsBefore);
  });

  it('a changed output differs at the ending, replayed from an exported file: exit 1', async () => {
    const exported = await loomInProcess(['export', 'order-1'], env);
    const file = join(dir, `${target.name}-order-1.jsonl`);
    writeFileSync(file, exported.stdout);
    const out = await replay([file, '--flows', module('flows-v3-output.mjs')]);
    expect(out.code).toBe(1);
    expect(out.report.divergence).toMatchObject({
      sequence: 5,
      recorded: {
        type: 'execution.completed',
        payload: { output: { id: 'o1', total: 42, paid: true } },
      },
      replayed: { type: 'execution.completed', payload: { output: { id: 'o1', paid: 'yes' } } },
    });
    const same = await replay([file, '--flows', module('flows-v1.mjs')]);
    expect(same.code).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(exported.stdout);
  });

  it('bad input is a usage error: no flows exported, a module that does not load, a broken file', async () => {
    const none = join(dir, 'none.mjs');
    writeFileSync(none, 'export const x = 1;\n');
    const noFlows = await loomInProcess(['replay', 'order-1', '--flows', none], env);
    expect(noFlows.code).toBe(2);
    expect(noFlows.stderr).toContain('exports no flow');
    const missing = await loomInProcess(
      ['replay', 'order-1', '--flows', join(dir, 'nope.mjs')],
      env,
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('could not be imported');
    const broken = join(dir, 'broken.jsonl');
    writeFileSync(broken, '{"executionId":\n');
    const bad = await loomInProcess(['replay', broken, '--flows', module('flows-v1.mjs')], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('broken.jsonl:1 is not JSON');
  });
});

describe.each(targets)('loom replay of an agent run on $name', (target) => {
  const env = { LOOM_DB: target.db };
  const replay = async (args: string[]) => {
    const out = await loomInProcess(['replay', ...args, '--json'], env);
    return { code: out.code, stderr: out.stderr, report: JSON.parse(out.stdout) as ReplayReport };
  };
  let recorded: StoredEvent[] = [];

  beforeAll(async () => {
    // The agent as deployed, from the module `--flows` loads; its stub model and tool run here.
    const { support, lookups } = (await import(module('agents-v1.mjs'))) as {
      support: Agent;
      lookups: unknown[];
    };
    const backend = await target.open();
    const flows = createRuntime({ backend, timerPollMs: 0 });
    try {
      const agents = createAgentRuntime({ flows, agents: [support] });
      const before = lookups.length;
      const result = await agents.run(support, 'where is order 7?', { runId: 'support-1' });
      expect(result.reason).toBe('goal_completed');
      expect(lookups.slice(before)).toEqual([{ id: '7' }]);
      recorded = await backend.events.read('support-1');
    } finally {
      await flows.shutdown();
    }
  });

  it('the agent as deployed fits its log: exit 0, nothing written', async () => {
    const out = await replay(['support-1', '--flows', module('agents-v1.mjs')]);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.report).toMatchObject({
      executionId: 'support-1',
      flow: 'agent:support',
      recordedEvents: recorded.length,
      ok: true,
    });
    const human = await loomInProcess(
      ['replay', 'support-1', '--flows', module('agents-v1.mjs')],
      env,
    );
    expect(human.stdout).toBe(
      `ok: support-1 (agent:support), ${recorded.length} events replayed with today's code\n`,
    );
    const after = await loomInProcess(['events', 'support-1', '--json'], env);
    expect(JSON.parse(after.stdout)).toHaveLength(recorded.length);
  });

  it('a renamed tool no longer fits: the divergence at the call, exit 1', async () => {
    const out = await replay(['support-1', '--flows', module('agents-v2-renamed.mjs')]);
    expect(out.code).toBe(1);
    expect(out.report.ok).toBe(false);
    expect(out.report.divergence?.message).toContain(
      "the log's turn 1 calls tool 'lookup_order', which agent 'support' no longer has",
    );
    expect(out.report.divergence?.replayed).toMatchObject({
      type: 'execution.failed',
      payload: { error: { code: 'NON_DETERMINISM' } },
    });
    const human = await loomInProcess(
      ['replay', 'support-1', '--flows', module('agents-v2-renamed.mjs')],
      env,
    );
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/^DIVERGED: support-1 \(agent:support\) at sequence \d+: /);
  });

  it('from an exported file too, and replayLog takes the agents in code (no tool is called)', async () => {
    const file = join(dir, `${target.name}-support-1.jsonl`);
    writeFileSync(file, (await loomInProcess(['export', 'support-1'], env)).stdout);
    expect((await replay([file, '--flows', module('agents-v1.mjs')])).code).toBe(0);
    const deployed = (await import(module('agents-v1.mjs'))) as {
      support: Agent;
      lookups: unknown[];
    };
    const calls = deployed.lookups.length;
    expect(await replayLog(recorded, [], { agents: [deployed.support] })).toMatchObject({
      ok: true,
      recordedEvents: recorded.length,
    });
    expect(deployed.lookups).toHaveLength(calls);
    const { support } = (await import(module('agents-v2-renamed.mjs'))) as { support: Agent };
    const report = await replayLog(recorded, [], { agents: [support] });
    expect(report.ok).toBe(false);
    await expect(replayLog(recorded, [])).rejects.toMatchObject({ code: 'FLOW_NOT_REGISTERED' });
  });
});
