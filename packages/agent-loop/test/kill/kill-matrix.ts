// The kill matrix: for each side-effect class and each transition of a turn, a real child
// process is SIGKILLed there, restarted, and the tool's invocations (counted through a side
// channel it writes) must match the at-most-once contract exactly.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killTestProcesses, until } from '@loom/event-runtime/testing';
import { afterAll, expect, it } from 'vitest';
import { isRerunnable, type SideEffect, sideEffects } from '../../src/index.js';
import {
  callsIn,
  completedSteps,
  invocationsIn,
  life,
  openLog,
  spawnLife,
} from './kill-harness.js';

/** The durable transitions of a turn, in order, and a kill inside the tool after its side effect. */
const killPoints = ['decided', 'policy_decided', 'tool_started', 'mid_tool', 'observed'] as const;
type KillPoint = (typeof killPoints)[number];

/** Invocations once the first life died there. */
const beforeRestart: Record<KillPoint, number> = {
  decided: 0,
  policy_decided: 0,
  tool_started: 0,
  mid_tool: 1,
  observed: 1,
};

/** Points where the tool may have run but its result is not in the log. */
const unknownOutcome = new Set<KillPoint>(['tool_started', 'mid_tool']);

/**
 * The flow runtime options that retry or re-drive steps, for the cases that resolve an
 * interrupted call: a runtime-wide step retry (which no tool step may take unless its class
 * allows it) and the poison budget of steps found in flight on resume.
 */
const redriving = JSON.stringify({
  stepRetry: { attempts: 3, backoff: { initialMs: 1, jitter: 'none' } },
  stepInterruptionsMax: 1,
});

export function killMatrix(backendEnv: (caseName: string) => Record<string, string>): void {
  const dir = mkdtempSync(join(tmpdir(), 'loom-agent-kill-'));
  afterAll(killTestProcesses);
  for (const sideEffect of sideEffects) {
    for (const killAt of killPoints) {
      it(`${sideEffect}, killed at ${killAt}: the contract holds`, async () => {
        const name = `${sideEffect}-${killAt}`;
        const file = join(dir, `${name}.invocations`);
        const env = {
          ...backendEnv(name),
          KILL_RUN_ID: `run-${name}`,
          KILL_SIDE_EFFECT: sideEffect,
          KILL_INVOCATIONS: file,
        };
        await expectedLives(env, file, sideEffect, killAt, { kind: 'rerun' });
      });
    }
  }
  it('remote_mutation killed mid-tool, resolved by recording the outcome by hand: never re-run', async () => {
    const name = 'record-by-hand';
    const file = join(dir, `${name}.invocations`);
    const env = {
      ...backendEnv(name),
      KILL_RUN_ID: `run-${name}`,
      KILL_SIDE_EFFECT: 'remote_mutation',
      KILL_INVOCATIONS: file,
      KILL_RUNTIME: redriving,
    };
    await expectedLives(env, file, 'remote_mutation', 'mid_tool', {
      kind: 'record',
      output: { done: 'by hand' },
    });
  });
  it('local_mutation killed at tool_started, re-run rejected: the run ends and the tool never ran', async () => {
    const name = 'reject-rerun';
    const file = join(dir, `${name}.invocations`);
    const env = {
      ...backendEnv(name),
      KILL_RUN_ID: `run-${name}`,
      KILL_SIDE_EFFECT: 'local_mutation',
      KILL_INVOCATIONS: file,
      KILL_RUNTIME: redriving,
    };
    await expectedLives(env, file, 'local_mutation', 'tool_started', { kind: 'reject' });
  });
  it('remote_mutation killed mid-tool under stepRetry: a plain approve is refused, the re-run that throws after its effect runs once', async () => {
    const name = 'plain-then-rerun';
    const file = join(dir, `${name}.invocations`);
    const env = {
      ...backendEnv(name),
      KILL_RUN_ID: `run-${name}`,
      KILL_SIDE_EFFECT: 'remote_mutation',
      KILL_INVOCATIONS: file,
      KILL_RUNTIME: redriving,
    };
    const first = await life({ ...env, KILL_AT: 'mid_tool' });
    expect(first.signal, first.output).toBe('SIGKILL');
    const second = await life(env);
    expect(second.line?.kind, second.output).toBe('approval');
    // An approve that does not say rerun or record is refused; the run keeps waiting.
    const plain = await life({ ...env, KILL_RESOLVE: JSON.stringify({ kind: 'plain' }) });
    expect(plain.code, plain.output).toBe(0);
    expect(plain.output).toContain('refused RESOLUTION_REQUIRED');
    expect(plain.line?.kind, plain.output).toBe('approval');
    expect(plain.line?.value).toMatchObject({ kind: 'interrupted_side_effect', status: 'pending' });
    expect(invocationsIn(file)).toBe(1);
    // Re-run: the tool acts and throws; the runtime's stepRetry must not call it again.
    const rerun = await life({
      ...env,
      KILL_RESOLVE: JSON.stringify({ kind: 'rerun' }),
      KILL_TOOL_THROWS: '1',
    });
    expect(rerun.code, rerun.output).toBe(0);
    expect(rerun.line?.value).toMatchObject({ reason: 'goal_completed', turns: 2 });
    expect(invocationsIn(file)).toBe(2);
  });
  it('two remote_mutation calls in a turn, killed while the second runs: only the second is asked about', async () => {
    await finishedSiblingKept(dir, backendEnv('finished-sibling'));
  });
  it('a mixed turn, approved, then killed while the ungated call runs: the gated call ran once, only the ungated one is asked about', async () => {
    await mixedTurnApprovedThenKilled(dir, backendEnv('mixed-approved'));
  });
  it('a mixed turn, killed as its answer is recorded, then rejected: the ungated call runs once after the decision, the gated one never', async () => {
    await mixedTurnKilledThenRejected(dir, backendEnv('mixed-rejected'));
  });
}

/**
 * A mixed turn: the model asks for `act` twice ({ n: 1 }, { n: 2 }, both remote_mutation) and
 * the policy gates n = 1. The turn records both verdicts and the approval, then waits: no call
 * runs, the ungated one included, until every approval of the turn is decided.
 */
function mixedEnv(name: string, dir: string, backend: Record<string, string>) {
  const runId = `run-${name}`;
  const file = join(dir, `${name}.invocations`);
  return {
    runId,
    file,
    gated: `${runId}/1.0`,
    ungated: `${runId}/1.1`,
    env: {
      ...backend,
      KILL_RUN_ID: runId,
      KILL_SIDE_EFFECT: 'remote_mutation',
      KILL_INVOCATIONS: file,
      KILL_PAIR: '1',
      KILL_GATE: '1',
    },
  };
}

/** The first life: the run waits for the approval of the gated call, and nothing has run. */
async function waitsForTheGatedCall(env: Record<string, string>, file: string, runId: string) {
  const waiting = await life(env);
  expect(waiting.code, waiting.output).toBe(0);
  expect(waiting.line?.value, waiting.output).toMatchObject({
    id: `${runId}~1.0`,
    kind: 'tool_call',
    status: 'pending',
    request: { tool: 'act', input: { n: 1 } },
  });
  expect(callsIn(file)).toEqual([]);
}

async function mixedTurnApprovedThenKilled(dir: string, backend: Record<string, string>) {
  const { runId, file, gated, ungated, env } = mixedEnv('mixed-approved', dir, backend);
  const marker = join(dir, 'mixed-approved.ungated-started');
  await waitsForTheGatedCall(env, file, runId);

  // Approved: both calls run, in parallel; the ungated one runs until the test kills the worker.
  const running = spawnLife({
    ...env,
    KILL_RESOLVE: JSON.stringify({ kind: 'approve' }),
    KILL_RESOLVE_APPROVAL: 'tool_call',
    KILL_BLOCK: marker,
  });
  let died = false;
  void running.ended.then(() => {
    died = true;
  });
  await until(
    () => died || (callsIn(marker).length === 1 && callsIn(file).includes(gated)),
    'the ungated call to start, and the gated call to be called',
  );
  expect(died, 'the worker died before the ungated call ran').toBe(false);
  const log = await openLog(env);
  try {
    await until(
      async () => completedSteps(await log.read(runId), (name) => name === 'tool:1.0').length > 0,
      "the gated call's step.completed in the log",
      10_000,
    );
    running.kill();
    const killed = await running.ended;
    expect(killed.signal, killed.output).toBe('SIGKILL');
    expect(callsIn(file).sort()).toEqual([gated, ungated]);

    // Restarted: only the ungated call's outcome is unknown; the gated one's result is kept.
    const restarted = await life(env);
    expect(restarted.line?.value, restarted.output).toMatchObject({
      id: `${runId}~1.1.i`,
      kind: 'interrupted_side_effect',
      status: 'pending',
      request: { tool: 'act', input: { n: 2 } },
    });
    expect(callsIn(file).sort()).toEqual([gated, ungated]);

    const rerun = await life({
      ...env,
      KILL_RESOLVE: JSON.stringify({ kind: 'rerun' }),
      KILL_RESOLVE_APPROVAL: 'interrupted_side_effect',
    });
    expect(rerun.line?.value, rerun.output).toMatchObject({
      reason: 'goal_completed',
      output: 'finished',
      turns: 2,
    });
    // The gated call ran once, after its approval; the ungated one again, once, on the re-run.
    expect(callsIn(file).sort()).toEqual([gated, ungated, ungated]);
    const decided = completedSteps(await log.read(runId), (name) => name.startsWith('approval:'));
    expect(decided.sort()).toEqual(['approval:1.0', 'approval:1.1.i']);
  } finally {
    await log.close();
  }
}

async function mixedTurnKilledThenRejected(dir: string, backend: Record<string, string>) {
  const { runId, file, ungated, env } = mixedEnv('mixed-rejected', dir, backend);
  // Killed once the model's answer is durable, before the verdicts are: the restart records the
  // verdicts and the approval, and waits.
  const killed = await life({ ...env, KILL_AT: 'decided' });
  expect(killed.signal, killed.output).toBe('SIGKILL');
  expect(callsIn(file)).toEqual([]);
  await waitsForTheGatedCall(env, file, runId);

  // Rejected without ending the run: the gated call is denied, the ungated one runs, once.
  const decided = await life({
    ...env,
    KILL_RESOLVE: JSON.stringify({ kind: 'reject' }),
    KILL_RESOLVE_APPROVAL: 'tool_call',
  });
  expect(decided.line?.value, decided.output).toMatchObject({
    reason: 'goal_completed',
    output: 'finished',
    turns: 2,
  });
  expect(callsIn(file)).toEqual([ungated]);
  const log = await openLog(env);
  try {
    const events = await log.read(runId);
    expect(completedSteps(events, (name) => name.startsWith('tool:'))).toEqual(['tool:1.1']);
  } finally {
    await log.close();
  }
}

/**
 * Two non-rerunnable calls in one turn: the first returns at once, the second runs until the
 * test SIGKILLs the worker. The first's result must be in the log by then, so the restarted
 * run asks only about the second, and a re-run repeats only the second.
 */
async function finishedSiblingKept(dir: string, backend: Record<string, string>): Promise<void> {
  const name = 'finished-sibling';
  const runId = `run-${name}`;
  const file = join(dir, `${name}.invocations`);
  const marker = join(dir, `${name}.second-started`);
  const env = {
    ...backend,
    KILL_RUN_ID: runId,
    KILL_SIDE_EFFECT: 'remote_mutation',
    KILL_INVOCATIONS: file,
    KILL_PAIR: '1',
  };
  const first = `${runId}/1.0`;
  const second = `${runId}/1.1`;
  const running = spawnLife({ ...env, KILL_BLOCK: marker });
  let died = false;
  void running.ended.then(() => {
    died = true;
  });
  await until(
    () => died || (callsIn(marker).length === 1 && callsIn(file).includes(first)),
    'the second call to start, after the first was called',
  );
  expect(died, 'the worker died before its second call ran').toBe(false);
  const log = await openLog(env);
  try {
    const firstCompleted = async () =>
      completedSteps(await log.read(runId), (name) => name === 'tool:1.0').length > 0;
    // The first call returned: its result has had every chance to become durable (it never will
    // if it waits for the second call). Waiting longer proves nothing more; the kill comes anyway.
    let durableBeforeKill = true;
    try {
      await until(firstCompleted, "the first call's step.completed in the log", 10_000);
    } catch {
      durableBeforeKill = false;
    }
    running.kill();
    const killed = await running.ended;
    expect(killed.signal, killed.output).toBe('SIGKILL');
    expect(callsIn(file).sort()).toEqual([first, second]);

    const restarted = await life(env);
    expect(restarted.code, restarted.output).toBe(0);
    expect(restarted.line?.kind, restarted.output).toBe('approval');
    // Only the call whose outcome is unknown is asked about: the first one's result returned.
    expect(restarted.line?.value).toMatchObject({
      id: `${runId}~1.1.i`,
      kind: 'interrupted_side_effect',
      status: 'pending',
      request: { tool: 'act', input: { n: 2 } },
    });
    expect(durableBeforeKill, "the first call's result was durable while the second ran").toBe(
      true,
    );
    expect(callsIn(file).sort()).toEqual([first, second]);

    const rerun = await life({ ...env, KILL_RESOLVE: JSON.stringify({ kind: 'rerun' }) });
    expect(rerun.code, rerun.output).toBe(0);
    expect(rerun.line?.value).toMatchObject({
      reason: 'goal_completed',
      output: 'finished',
      turns: 2,
    });
    // The first call ran once in all, its recorded result kept; the second ran again once.
    expect(callsIn(file).sort()).toEqual([first, second, second]);
    const events = await log.read(runId);
    const firstSteps = events.filter(
      (event) => (event.payload as { name?: unknown }).name === 'tool:1.0',
    );
    expect(firstSteps.map((event) => event.type)).toEqual(['step.started', 'step.completed']);
    expect(firstSteps[1]?.payload).toMatchObject({ result: { output: { done: 1 } } });
    // Nobody was ever asked about the first call.
    expect(completedSteps(events, (name) => name.endsWith('.i'))).toEqual(['approval:1.1.i']);
  } finally {
    await log.close();
  }
}

async function expectedLives(
  env: Record<string, string>,
  file: string,
  sideEffect: SideEffect,
  killAt: KillPoint,
  resolution: { kind: 'rerun' } | { kind: 'record'; output: unknown } | { kind: 'reject' },
): Promise<void> {
  const first = await life({ ...env, KILL_AT: killAt });
  expect(first.signal, first.output).toBe('SIGKILL');
  expect(invocationsIn(file)).toBe(beforeRestart[killAt]);

  const second = await life(env);
  expect(second.code, second.output).toBe(0);
  if (!unknownOutcome.has(killAt) || isRerunnable(sideEffect)) {
    // Nothing was in doubt, or the tool may repeat: the run finishes by itself.
    expect(second.line?.kind, second.output).toBe('result');
    expect(second.line?.value).toMatchObject({
      reason: 'goal_completed',
      output: 'finished',
      turns: 2,
    });
    const rerun = unknownOutcome.has(killAt) ? 1 : 0;
    expect(invocationsIn(file)).toBe(Math.max(1, beforeRestart[killAt] + rerun));
    return;
  }
  // At most once: the restarted process did not call the tool; the run waits for a person.
  expect(second.line?.kind, second.output).toBe('approval');
  expect(second.line?.value).toMatchObject({
    kind: 'interrupted_side_effect',
    status: 'pending',
    request: { tool: 'act', sideEffect },
  });
  expect(invocationsIn(file)).toBe(beforeRestart[killAt]);

  // A third process decides and drives the run; the waiting run held no lease.
  const third = await life({ ...env, KILL_RESOLVE: JSON.stringify(resolution) });
  expect(third.code, third.output).toBe(0);
  expect(third.line?.kind, third.output).toBe('result');
  expect(third.line?.value).toMatchObject(
    resolution.kind === 'reject'
      ? { reason: 'approval_rejected', turns: 1 }
      : { reason: 'goal_completed', output: 'finished', turns: 2 },
  );
  expect(invocationsIn(file)).toBe(beforeRestart[killAt] + (resolution.kind === 'rerun' ? 1 : 0));
}
