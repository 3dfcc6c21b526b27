// The proof of ADR 0050 across processes, shared by the SQLite and Postgres tests: worker A
// drives a run until it waits for an approval and is SIGKILLed; the test approves; worker B (a
// new process) resumes the run and streams the answer; this process follows the run from the
// start and gets every piece of B's text once and in order, live (B's model waits for each
// word to be seen here before writing the next), across a forced reconnect to a fresh
// connection resumed from the stream's cursor.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Backend } from '@loom/event-runtime';
import { spawnTestProcess } from '@loom/event-runtime/testing';
import { createRuntime } from '@loom/workflow-runtime';
import { expect } from 'vitest';
import { type AgentEvent, type AgentStream, createAgentRuntime } from '../../src/index.js';
import { liveAnswer } from './live-answer.js';

const worker = join(import.meta.dirname, 'live-worker.ts');
const waitMs = 30_000;

/** Takes the stream's events until `stop` says so or it ends; every wait has a deadline. */
async function takeUntil(
  stream: AgentStream,
  into: AgentEvent[],
  stop: (event: AgentEvent) => boolean,
): Promise<void> {
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), waitMs);
    });
    const next = await Promise.race([stream.next(), late]);
    clearTimeout(timer);
    if (next === 'late')
      throw new Error(`no event within ${waitMs} ms after ${JSON.stringify(into.at(-1))}`);
    if (next.done === true) return;
    into.push(next.value);
    if (stop(next.value)) return;
  }
}

/** The text a consumer shows from `events`: each delta must continue it exactly. */
function shownText(events: readonly AgentEvent[], turn: number): string {
  let text = '';
  for (const event of events) {
    if (event.type === 'text_retracted' && event.turn === turn) text = '';
    if (event.type === 'text_delta' && event.turn === turn) {
      expect(event.offset).toBe(text.length);
      text += event.text;
    }
  }
  return text;
}

/**
 * Runs the case. `open` opens this process's own backend on the same database (called twice: the
 * reconnect uses a fresh one); `env` tells the workers where the database is.
 */
export async function liveAcrossWorkersCase(
  open: () => Promise<Backend>,
  env: Record<string, string>,
  dir: string,
): Promise<void> {
  const runId = `live-${Date.now().toString(36)}`;
  const common = { ...env, LIVE_RUN_ID: runId, LIVE_DIR: dir };
  const first = await open();
  const flows = createRuntime({ backend: first });
  const agents = createAgentRuntime({ flows, agents: [] });
  const workerA = spawnTestProcess(worker, { env: { ...common, LIVE_ROLE: 'a' } });
  const approvalId = (await workerA.line('waiting ')).slice('waiting '.length).trim();
  // Following from the start, before B exists.
  let stream = agents.stream(runId);
  const events: AgentEvent[] = [];
  await takeUntil(stream, events, (event) => event.type === 'approval_required');
  expect((await workerA.kill()).signal).toBe('SIGKILL');

  await agents.approve(approvalId, { by: 'ops@example.com' });
  const workerB = spawnTestProcess(worker, { env: { ...common, LIVE_ROLE: 'b' } });
  const words = liveAnswer.split(' ');
  let opened = 0;
  const openGates = () => {
    const seen = shownText(events, 2);
    // Gate n opens once word n (and its trailing space) is shown here.
    while (
      opened < words.length - 1 &&
      seen.startsWith(`${words.slice(0, opened + 1).join(' ')} `)
    ) {
      writeFileSync(join(dir, `gate-${opened}`), 'open');
      opened++;
    }
  };
  // Part one: until the third word is shown, then a forced reconnect.
  await takeUntil(stream, events, () => {
    openGates();
    return opened >= 3;
  });
  const cursor = stream.cursor;
  await stream.close();
  await flows.shutdown();
  const second = await open();
  const flows2 = createRuntime({ backend: second });
  const agents2 = createAgentRuntime({ flows: flows2, agents: [] });
  stream = agents2.stream(runId, { after: cursor });
  await takeUntil(stream, events, (event) => {
    openGates();
    return event.type === 'finished';
  });
  const printed = /^result (.*)$/m.exec((await workerB.succeeded(waitMs)).output);
  expect(printed).not.toBeNull();
  const result = JSON.parse(printed?.[1] as string);
  await flows2.shutdown();

  expect(result).toMatchObject({ reason: 'goal_completed', output: liveAnswer, turns: 2 });
  expect(events.at(-1)).toMatchObject({ type: 'finished', result: { output: liveAnswer } });
  // Every gate was opened from text this process was shown while B's call was still running.
  expect(opened).toBe(words.length - 1);
  // B's text: exactly the answer, each code unit once and in order (shownText checks offsets),
  // one attempt, never retracted, all of it before the recorded answer.
  expect(shownText(events, 2)).toBe(liveAnswer);
  const deltas = events.filter((e) => e.type === 'text_delta');
  expect(deltas.length).toBeGreaterThan(3);
  expect(new Set(deltas.map((e) => (e.type === 'text_delta' ? e.attempt : ''))).size).toBe(1);
  expect(deltas.every((e) => e.turn === 2 && !e.replayed)).toBe(true);
  expect(events.some((e) => e.type === 'text_retracted')).toBe(false);
  const types = events.map((e) => e.type);
  expect(types.lastIndexOf('text_delta')).toBeLessThan(types.lastIndexOf('model_responded'));
  // The durable events: each once, in order, across the reconnect.
  const sequences = events.flatMap((e) => (e.sequence === undefined ? [] : [e.sequence]));
  for (let i = 1; i < sequences.length; i++) {
    expect(sequences[i]).toBeGreaterThan(sequences[i - 1] as number);
  }
  expect(types.filter((t) => t !== 'text_delta')).toEqual([
    'turn_started',
    'model_responded',
    'approval_required',
    'tool_started',
    'tool_completed',
    'turn_started',
    'model_responded',
    'finished',
  ]);
}
