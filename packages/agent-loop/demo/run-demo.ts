// The demo's driver: it runs the demo's processes one after another on one SQLite file, kills
// the first with a real SIGKILL while the run waits for approval, lets a second resume it and a
// third approve, then reads the log, verifies its hash chain, counts the refunds in the side
// channel, and says whether the contract held.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import type { RunResult } from '../src/index.js';
import { contractBreaches } from './contract-breaches.js';
import { type DemoSettings, demoEnv, demoLifeDeadlineMs } from './demo-settings.js';
import { demoRunId, refundsIn } from './support-agent.js';

/** The driver kills a child this long after the child's own deadline should have ended it. */
const driverGraceMs = 5_000;

interface Life {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The machine lines (`@waiting …`, `@result …`) the child printed, without the `@`. */
  machine: string[];
}

function life(
  tag: string,
  label: string,
  script: string,
  env: Record<string, string>,
  onMachineLine: (line: string, child: ReturnType<typeof spawn>) => void = () => {},
): Promise<Life> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, script)], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    console.log(`\n▶ ${tag}: ${label} (pid ${child.pid})`);
    const machine: string[] = [];
    let buffered = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line.startsWith('@')) {
          machine.push(line.slice(1));
          onMachineLine(line.slice(1), child);
        } else {
          console.log(`  ${tag} │ ${line}`);
        }
        newline = buffered.indexOf('\n');
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${tag}: the process ran over ${demoLifeDeadlineMs + driverGraceMs} ms`));
    }, demoLifeDeadlineMs + driverGraceMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, machine });
    });
  });
}

/**
 * Runs the demo with `model` (`stub`: `pnpm demo`; `openai`: `pnpm demo:openai`, the endpoint in
 * the environment). Files go to `LOOM_DEMO_DIR` (default `.loom-demo/` in the working
 * directory). Resolves true when the contract held.
 */
export async function runDemo(model: DemoSettings['model']): Promise<boolean> {
  const directory = process.env.LOOM_DEMO_DIR ?? join(process.cwd(), '.loom-demo');
  mkdirSync(directory, { recursive: true });
  const stamp = `${Date.now()}-${process.pid}`;
  const settings: DemoSettings = {
    db: join(directory, `agent-demo-${stamp}.db`),
    refundsFile: join(directory, `agent-demo-${stamp}.refunds.log`),
    model,
  };
  const env = demoEnv(settings);
  console.log(
    `Loom demo: a durable support agent (${model === 'stub' ? 'stub model' : 'OpenAI-compatible endpoint'}) on SQLite`,
  );
  console.log(`  log:          ${settings.db}`);
  console.log(
    `  side channel: ${settings.refundsFile} (the refund tool appends a line each time it runs)`,
  );

  // 1. A worker starts the run; the driver SIGKILLs it once the run waits for approval.
  let killedWhileWaiting = false;
  const first = await life('worker 1', 'starts the run', 'worker.ts', env, (line, child) => {
    if (!line.startsWith('waiting ') || killedWhileWaiting) return;
    killedWhileWaiting = true;
    console.log(
      `  💥 the driver sends SIGKILL to pid ${child.pid} while the run waits for approval`,
    );
    child.kill('SIGKILL');
  });
  killedWhileWaiting &&= first.signal === 'SIGKILL';

  // 2. A new worker resumes; once it sees the run still waiting, a third process approves.
  let approver: Promise<Life> | undefined;
  const second = await life(
    'worker 2',
    'a new process, after the crash',
    'worker.ts',
    env,
    (line) => {
      if (!line.startsWith('waiting ') || approver !== undefined) return;
      approver = life('approver', 'a third process, a person decides', 'approver.ts', env);
    },
  );
  const approved = approver === undefined ? undefined : await approver;
  const resultLine = second.machine.find((line) => line.startsWith('result '));
  const result =
    resultLine === undefined ? undefined : (JSON.parse(resultLine.slice(7)) as RunResult);

  // 3. What the log and the side channel say.
  const backend = openSqlite({ path: settings.db, readOnly: true });
  const events = await backend.events.read(demoRunId);
  console.log(`\nThe log of ${demoRunId} (${events.length} events):`);
  for (const event of events) {
    const name = (event.payload as { name?: unknown }).name;
    console.log(
      `  #${String(event.sequence).padStart(2)} ${event.type}${typeof name === 'string' ? ` ${name}` : ''}`,
    );
  }
  const verify = await backend.events.verify(demoRunId);
  await backend.close();
  const refunds = refundsIn(settings.refundsFile);

  console.log('');
  if (result !== undefined) {
    console.log(
      `result: ${result.reason} - ${JSON.stringify(result.output ?? result.error)} (${result.turns} turns, ${result.usage.modelCalls} model calls)`,
    );
  } else {
    console.log(`result: none (worker 2 exited with ${second.code ?? second.signal})`);
  }
  if (approved !== undefined && approved.code !== 0)
    console.log(`the approver exited with ${approved.code ?? approved.signal}`);
  console.log(`refund side effects: ${refunds.length} (${refunds.join('; ') || 'none'})`);
  console.log(
    `verify: ${verify.ok ? `hash chain intact over ${verify.events} events` : `BROKEN: ${JSON.stringify(verify)}`}`,
  );
  const breaches = contractBreaches({
    killedWhileWaiting,
    refunds: refunds.length,
    verified: verify.ok,
    reason: result?.reason,
  });
  if (breaches.length === 0) {
    console.log(
      'contract held: killed while waiting, approved from another process, refunded exactly once, log verified',
    );
    return true;
  }
  for (const breach of breaches) console.log(`CONTRACT BROKEN: ${breach}`);
  return false;
}
