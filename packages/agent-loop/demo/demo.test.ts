// The README's first command works: `pnpm demo` (demo/demo.ts) and `pnpm demo:openai`
// (demo/demo-openai.ts) run end to end as real processes (the driver spawns the workers and the
// approver and SIGKILLs the first worker), and what they print is checked against the SQLite
// file and the side channel they leave behind.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killTestProcesses, spawnTestProcess } from '@loom/event-runtime/testing';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { ChatCompletionsServer } from './chat-completions-server.test-support.js';
import { contractBreaches } from './contract-breaches.js';
import { openAiSettings } from './openai-model.js';
import { demoRunId } from './support-agent.js';

const packageDir = join(import.meta.dirname, '..');
const scratch = mkdtempSync(join(tmpdir(), 'loom-agent-demo-'));
afterAll(async () => {
  await killTestProcesses();
  rmSync(scratch, { recursive: true, force: true });
});
/** The whole demo, three child processes included, must end within this (before the test's 60 s). */
const demoDeadlineMs = 50_000;

/** Runs a demo entry to its exit (killed at the deadline): exit code and stdout + stderr. */
async function runEntry(
  entry: string,
  env: Record<string, string | undefined>,
): Promise<{ code: number | null; output: string }> {
  const run = spawnTestProcess(join('demo', entry), {
    cwd: packageDir,
    env,
    deadlineMs: demoDeadlineMs + 5_000,
  });
  const { code, output } = await run.ended(demoDeadlineMs);
  return { code, output };
}

const noOpenAi = Object.fromEntries(openAiSettings.map(([name]) => [name, undefined]));

/** What the demo left in `dir`, read without the demo's help: refunds and the log. */
async function leftBehind(dir: string) {
  const files = readdirSync(dir);
  const db = files.find((file) => file.endsWith('.db'));
  const refunds = files.find((file) => file.endsWith('.refunds.log'));
  if (db === undefined || refunds === undefined) throw new Error(`files left: ${files}`);
  const backend = openSqlite({ path: join(dir, db), readOnly: true });
  const events = await backend.events.read(demoRunId);
  const verify = await backend.events.verify(demoRunId);
  await backend.close();
  const stepsStarted = events
    .filter((event) => event.type === 'step.started')
    .map((event) => (event.payload as { name: string }).name);
  return {
    refundLines: readFileSync(join(dir, refunds), 'utf8').split('\n').filter(Boolean),
    verified: verify.ok,
    last: events.at(-1)?.type,
    stepsStarted,
  };
}

/** The lines every successful run of the demo prints, in this order. */
function expectContractLines(output: string) {
  const lines = [
    /^▶ worker 1: starts the run \(pid \d+\)$/m,
    /^ {2}💥 the driver sends SIGKILL to pid \d+ while the run waits for approval$/m,
    /^▶ worker 2: a new process, after the crash \(pid \d+\)$/m,
    /^ {2}worker 2 │ the run still waits for a person: refund \{"id":"A-17"\} is remote_mutation/m,
    /^ {2}approver │ approved by ana@example\.com from this process/m,
    /^ {2}worker 2 │ tool refund A-17: money sent \(idempotency key ticket-981\/2\.0\)/m,
    /^result: goal_completed - "Order A-17 was never delivered; I refunded it\." \(3 turns, 3 model calls\)$/m,
    /^refund side effects: 1 \(A-17 ticket-981\/2\.0\)$/m,
    /^verify: hash chain intact over \d+ events$/m,
    /^contract held: /m,
  ];
  let from = 0;
  for (const line of lines) {
    const match = line.exec(output.slice(from));
    expect(match, `${line} after offset ${from} in:\n${output}`).not.toBeNull();
    from += (match?.index ?? 0) + (match?.[0].length ?? 0);
  }
  // The refund never ran in the killed worker: its only line is in worker 2's part.
  expect(output.match(/tool refund A-17/g)).toHaveLength(1);
}

describe('pnpm demo: the agent, SIGKILLed while waiting for approval', () => {
  it('completes once approved from another process; the refund ran once and the log verifies', async () => {
    const dir = join(scratch, 'stub');
    const { code, output } = await runEntry('demo.ts', { LOOM_DEMO_DIR: dir, ...noOpenAi });
    expect(code, output).toBe(0);
    expectContractLines(output);
    const left = await leftBehind(dir);
    expect(left.refundLines).toEqual(['A-17 ticket-981/2.0']);
    expect(left.verified).toBe(true);
    expect(left.last).toBe('execution.completed');
    // Each recorded step ran once across the three processes: nothing was redone after the kill.
    expect(left.stepsStarted.filter((name) => name === 'tool:2.0')).toHaveLength(1);
    expect(new Set(left.stepsStarted).size).toBe(left.stepsStarted.length);
  });
});

describe('the contract the demo checks before it exits 0', () => {
  const held = { killedWhileWaiting: true, refunds: 1, verified: true, reason: 'goal_completed' };

  it('holds only when everything held', () => {
    expect(contractBreaches(held)).toEqual([]);
  });

  it('names each breach', () => {
    expect(contractBreaches({ ...held, refunds: 2 })).toEqual([
      'the refund ran 2 times (side channel lines), not exactly once',
    ]);
    expect(contractBreaches({ ...held, refunds: 0 })).toHaveLength(1);
    expect(contractBreaches({ ...held, verified: false })).toEqual([
      "verify failed: the run's hash chain is broken",
    ]);
    expect(contractBreaches({ ...held, reason: 'approval_rejected' })).toEqual([
      'the run ended with approval_rejected, not goal_completed',
    ]);
    expect(contractBreaches({ ...held, reason: undefined })).toHaveLength(1);
    expect(contractBreaches({ ...held, killedWhileWaiting: false })).toHaveLength(1);
  });
});

describe('pnpm demo:openai', () => {
  it('without its settings, says exactly how to set them and exits 0', async () => {
    const { code, output } = await runEntry('demo-openai.ts', {
      LOOM_DEMO_DIR: join(scratch, 'unset'),
      ...noOpenAi,
      OPENAI_API_KEY: 'sk-set-but-alone',
    });
    expect(code, output).toBe(0);
    expect(output).toMatch(/not set: LOOM_OPENAI_BASE_URL, LOOM_OPENAI_MODEL\./);
    expect(output).toContain('  export LOOM_OPENAI_BASE_URL=https://api.openai.com/v1\n');
    expect(output).toContain('  export OPENAI_API_KEY=sk-...\n');
    expect(output).toContain('  export LOOM_OPENAI_MODEL=gpt-4o-mini\n');
    expect(output).toContain('  pnpm demo:openai\n');
    expect(output).not.toContain('worker 1');
  });

  it('runs the same agent against an OpenAI-compatible endpoint (a local chat-completions server)', async () => {
    const server = await ChatCompletionsServer.start();
    try {
      const dir = join(scratch, 'openai');
      const { code, output } = await runEntry('demo-openai.ts', {
        LOOM_DEMO_DIR: dir,
        LOOM_OPENAI_BASE_URL: server.baseUrl,
        OPENAI_API_KEY: 'test-key',
        LOOM_OPENAI_MODEL: 'demo-model',
      });
      expect(code, output).toBe(0);
      expect(output).toContain(`model: demo-model at ${server.baseUrl}`);
      expect(output).toMatch(
        /worker 1 │ model \(demo-model\) asks for lookup_order \{"id":"A-17"\}/,
      );
      expectContractLines(output);
      // Three model calls in all: worker 2 replayed the two recorded answers, it did not re-ask.
      expect(server.requests).toHaveLength(3);
      for (const request of server.requests) {
        expect(request.path).toBe('/v1/chat/completions');
        expect(request.authorization).toBe('Bearer test-key');
        expect(request.body.model).toBe('demo-model');
        expect(JSON.stringify(request.body.tools)).toMatch(/lookup_order.*refund/);
      }
      const left = await leftBehind(dir);
      expect(left.refundLines).toEqual(['A-17 ticket-981/2.0']);
      expect(left.verified).toBe(true);
    } finally {
      await server.close();
    }
  });
});
