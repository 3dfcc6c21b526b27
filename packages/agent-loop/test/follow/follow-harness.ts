// A second process follows a run by id: the test process spawns follow-worker.ts, which drives
// the run, and follows it through the same store. Shared by the SQLite and Postgres tests.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type EventStore, EventType } from '@loom/event-runtime';
import { spawnTestProcess } from '@loom/event-runtime/testing';
import { createRuntime } from '@loom/workflow-runtime';
import { expect } from 'vitest';
import { type AgentEvent, createAgentRuntime } from '../../src/index.js';

const worker = join(import.meta.dirname, 'follow-worker.ts');
const deadlineMs = 60_000;

/** The worker's run, to its exit; resolves with what it printed. */
function drive(env: Record<string, string>): { exited: Promise<string>; kill(): void } {
  const child = spawnTestProcess(worker, { env, deadlineMs: deadlineMs + 5_000 });
  const exited = child.succeeded(deadlineMs).then(({ output }) => output);
  return { exited, kill: () => child.child.kill('SIGKILL') };
}

/** Polls the log (bounded) until `wait_gate`'s tool step has started in the worker. */
async function gateReached(store: EventStore, runId: string): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const events = await store.read(runId);
    const started = events.some(
      (e) =>
        e.type === EventType.stepStarted && (e.payload as { name?: unknown }).name === 'tool:2.0',
    );
    if (started) return;
    if (Date.now() > deadline) throw new Error('the worker never reached wait_gate');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The test: the worker drives the run to `wait_gate`; this process then follows the run by id,
 * gets the log's events (`replayed: true`), opens the gate, and gets the rest live, in order,
 * each once, ending in `finished` with the worker's own result.
 */
export async function followByIdCase(
  store: EventStore,
  env: Record<string, string>,
  dir: string,
): Promise<void> {
  const runId = 'followed-1';
  const gate = join(dir, `${runId}-${Date.now()}.gate`);
  const run = drive({ ...env, FOLLOW_RUN_ID: runId, FOLLOW_GATE: gate });
  try {
    await gateReached(store, runId);
    const flows = createRuntime({ store });
    const agents = createAgentRuntime({ flows, agents: [] });
    const events: AgentEvent[] = [];
    const stream = agents.stream(runId);
    for await (const event of stream) {
      events.push(event);
      if (event.type === 'tool_started' && event.tool === 'wait_gate') writeFileSync(gate, 'open');
    }
    const printed = /^result (.*)$/m.exec(await run.exited);
    expect(printed).not.toBeNull();
    const result = JSON.parse(printed?.[1] as string);

    expect(events.map((e) => [e.type, e.replayed])).toEqual([
      ['turn_started', true],
      ['model_responded', true],
      ['tool_started', true],
      ['tool_completed', true],
      ['turn_started', true],
      ['model_responded', true],
      ['tool_started', true],
      ['tool_completed', false],
      ['turn_started', false],
      // The turn followed live: its text, completed from the recorded answer (no live channel
      // on these stores), before the answer itself (ADR 0050).
      ['text_delta', false],
      ['model_responded', false],
      ['finished', false],
    ]);
    const sequences = events.flatMap((e) => (e.sequence === undefined ? [] : [e.sequence]));
    for (let i = 1; i < sequences.length; i++) {
      expect(sequences[i]).toBeGreaterThan(sequences[i - 1] as number);
    }
    expect(events[3]).toMatchObject({ tool: 'lookup', output: { id: 'A-17', delivered: false } });
    expect(events[10]).toMatchObject({ type: 'model_responded', text: result.output });
    expect(events[9]).toMatchObject({ type: 'text_delta', offset: 0, text: result.output });
    expect(events[7]).toMatchObject({
      tool: 'wait_gate',
      outcome: 'result',
      output: { opened: true },
    });
    expect(events.at(-1)).toMatchObject({ type: 'finished', result });
    expect(result).toMatchObject({ reason: 'goal_completed', turns: 3 });
    await flows.shutdown();
  } finally {
    run.kill();
  }
}
