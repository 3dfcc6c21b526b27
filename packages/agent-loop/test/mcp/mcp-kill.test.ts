// SIGKILL of an agent process mid-call of an MCP tool (the kill-test pattern of test/kill/): a
// real child process runs the agent on a SQLite file, its MCP server is a real stdio child of
// it, and the server's side channel counts the tool's invocations exactly.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killTestProcesses } from '@loom/event-runtime/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { life } from '../kill/kill-harness.js';
import { sideChannelLines } from './mcp-test-support.js';

const worker = join(import.meta.dirname, 'mcp-kill-worker.ts');
afterAll(killTestProcesses);
const dir = mkdtempSync(join(tmpdir(), 'loom-mcp-kill-'));

function caseEnv(name: string, tool: string): Record<string, string> {
  return {
    KILL_DB: join(dir, `${name}.db`),
    KILL_RUN_ID: `run-${name}`,
    MCP_TOOL: tool,
    MCP_SIDE_CHANNEL: join(dir, `${name}.side`),
  };
}

describe.concurrent('an agent SIGKILLed mid-call of an MCP tool', () => {
  it('a non-idempotent MCP tool (remote_mutation) is not re-run by itself: the run waits on interrupted_side_effect', async () => {
    const env = caseEnv('append', 'append_line');
    const side = env.MCP_SIDE_CHANNEL as string;
    const first = await life({ ...env, KILL_MID_CALL: '1' }, worker);
    expect(first.signal, first.output).toBe('SIGKILL');
    expect(sideChannelLines(side)).toEqual(['append_line run-append/1.0']);

    const second = await life(env, worker);
    expect(second.code, second.output).toBe(0);
    expect(second.line?.kind, second.output).toBe('approval');
    expect(second.line?.value).toMatchObject({
      kind: 'interrupted_side_effect',
      status: 'pending',
      request: { tool: 'append_line', sideEffect: 'remote_mutation' },
    });
    expect(sideChannelLines(side)).toEqual(['append_line run-append/1.0']);

    // An operator re-runs it: one more call, with the same idempotency key.
    const third = await life({ ...env, KILL_RESOLVE: JSON.stringify({ kind: 'rerun' }) }, worker);
    expect(third.line?.kind, third.output).toBe('result');
    expect(third.line?.value).toMatchObject({ reason: 'goal_completed', output: 'finished' });
    expect(sideChannelLines(side)).toEqual([
      'append_line run-append/1.0',
      'append_line run-append/1.0',
    ]);
  });

  for (const [tool, sideEffect] of [
    ['read_note', 'read_only'],
    ['set_flag', 'idempotent'],
  ] as const) {
    it(`a ${sideEffect} MCP tool is re-run after the restart and the run completes`, async () => {
      const env = caseEnv(tool, tool);
      const side = env.MCP_SIDE_CHANNEL as string;
      const first = await life({ ...env, KILL_MID_CALL: '1' }, worker);
      expect(first.signal, first.output).toBe('SIGKILL');
      expect(sideChannelLines(side)).toEqual([`${tool} run-${tool}/1.0`]);

      const second = await life(env, worker);
      expect(second.line?.kind, second.output).toBe('result');
      expect(second.line?.value).toMatchObject({ reason: 'goal_completed', output: 'finished' });
      expect(sideChannelLines(side)).toEqual([
        `${tool} run-${tool}/1.0`,
        `${tool} run-${tool}/1.0`,
      ]);
    });
  }
});
