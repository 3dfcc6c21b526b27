// Runs the fault worker and hands the test its stdout lines as they come.
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { spawnTestProcess } from '../../src/testing.js';

const worker = join(import.meta.dirname, 'fault-worker.ts');

/** What the worker printed at the end. */
export interface FaultResult {
  execs: number;
  settled: number;
  failed: number;
  timedOut: boolean;
  stillRunning: number;
  errors: string[];
  /** Every error the worker saw, by code. */
  errorCounts: Record<string, number>;
  /** The first ten errors other than STORE_UNAVAILABLE, with their messages. */
  rareErrors: string[];
  /** Times the worker's node claim ended under it (`node:claim_lost`), and was made again. */
  claimsLost: number;
  claimsRegained: number;
  /** Whether the claim was lost still when the worker ended. */
  claimLostAtEnd: boolean;
  /** Up to 5 executions whose handle never settled: driven here?, what the runtime said of them, their events. */
  stranded: Array<{ id: string; driving: boolean; said: string[]; events: string[] }>;
}

export interface FaultRun {
  child: ChildProcess;
  /** True once the worker exited. */
  exited(): boolean;
  /** Resolves when the worker printed `line` (rejects if it exits first). */
  printed(line: string): Promise<void>;
  /** Exit code and the parsed result line (undefined if it never printed one). */
  exit: Promise<{ code: number | null; result: FaultResult | undefined; output: string }>;
}

/**
 * The worker gives up waiting for its executions after 25 s by itself; one still running at 50 s
 * is stuck, and is killed (so its test fails with what it printed instead of leaving it behind).
 */
const workerDeadlineMs = 50_000;

export function runFaultWorker(env: Record<string, string>): FaultRun {
  const run = spawnTestProcess(worker, { env, deadlineMs: workerDeadlineMs });
  const exit = run.exit.then(({ code }) => {
    const output = run.output();
    const line = output.split('\n').find((candidate) => candidate.startsWith('result '));
    return {
      code,
      result: line === undefined ? undefined : (JSON.parse(line.slice(7)) as FaultResult),
      output,
    };
  });
  return {
    child: run.child,
    exit,
    exited: run.exited,
    printed: async (line) => {
      await run.waitFor(
        () => run.output().includes(`${line}\n`),
        `printing ${line}`,
        workerDeadlineMs,
      );
    },
  };
}
