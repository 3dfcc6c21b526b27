// The at-most-once contract holds for isolated tools: the agent's process is SIGKILLed (by the
// tool's child, after its side effect) while an isolated call runs. The orphaned child exits by
// itself; a second process re-runs a read_only call, and finds a remote_mutation call waiting
// on an interrupted_side_effect approval, which a third process re-runs.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killTestProcesses } from '@loom/event-runtime/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from '../../src/agent.test-support.js';
import { life } from '../kill/kill-harness.js';

const worker = join(import.meta.dirname, 'isolate-kill-worker.ts');
afterAll(killTestProcesses);
const dir = mkdtempSync(join(tmpdir(), 'loom-agent-isolate-kill-'));

/** `<idempotency key> <pid>` per call of the tool's module. */
function invocations(file: string): { key: string; pid: number }[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [key, pid] = line.split(' ');
      return { key: key as string, pid: Number(pid) };
    });
}

function gone(pid: number): Promise<true> {
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`not a pid: ${pid}`);
  return eventually(
    async () => {
      try {
        process.kill(pid, 0);
        return undefined;
      } catch (error) {
        return (error as { code?: string }).code === 'ESRCH' ? true : undefined;
      }
    },
    `the orphaned child ${pid} to exit`,
    30_000,
  );
}

describe.concurrent('an isolated tool whose agent process is SIGKILLed mid-call, on a SQLite file', () => {
  it('read_only: the orphan exits, and the call runs again (same key) in a new child', async () => {
    const file = join(dir, 'read-only.invocations');
    const env = {
      KILL_DB: join(dir, 'read-only.db'),
      KILL_RUN_ID: 'iso-read-only',
      KILL_SIDE_EFFECT: 'read_only',
      KILL_INVOCATIONS: file,
    };
    const first = await life({ ...env, KILL_AT: 'mid_tool' }, worker);
    expect(first.signal, first.output).toBe('SIGKILL');
    const [orphan] = invocations(file);
    await gone(orphan?.pid ?? 0);
    const second = await life(env, worker);
    expect(second.line?.kind, second.output).toBe('result');
    expect(second.line?.value.reason).toBe('goal_completed');
    const calls = invocations(file);
    expect(calls.map((c) => c.key)).toEqual(['iso-read-only/1.0', 'iso-read-only/1.0']);
    expect(calls[1]?.pid).not.toBe(calls[0]?.pid);
  });

  it('remote_mutation: the orphan exits, the call is not run again until a person re-runs it', async () => {
    const file = join(dir, 'remote.invocations');
    const env = {
      KILL_DB: join(dir, 'remote.db'),
      KILL_RUN_ID: 'iso-remote',
      KILL_SIDE_EFFECT: 'remote_mutation',
      KILL_INVOCATIONS: file,
    };
    const first = await life({ ...env, KILL_AT: 'mid_tool' }, worker);
    expect(first.signal, first.output).toBe('SIGKILL');
    await gone(invocations(file)[0]?.pid ?? 0);
    const second = await life(env, worker);
    expect(second.line?.kind, second.output).toBe('approval');
    expect(second.line?.value.kind).toBe('interrupted_side_effect');
    expect(invocations(file)).toHaveLength(1);
    const third = await life({ ...env, KILL_RESOLVE: JSON.stringify({ kind: 'rerun' }) }, worker);
    expect(third.line?.kind, third.output).toBe('result');
    expect(third.line?.value.reason).toBe('goal_completed');
    expect(invocations(file)).toHaveLength(2);
  });
});
