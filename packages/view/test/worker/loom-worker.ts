// `loom worker` as a real child process: the built binary, run by the one process harness of
// @loom/event-runtime/testing. Shared by the worker tests, the kill campaign and the
// workers benchmark.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  spawnTestProcess,
  type TestProcess,
  testProcessDeadlineMs,
} from '@loom/event-runtime/testing';

export const loomBin = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));
export const workerFlows = fileURLToPath(new URL('./flows.mjs', import.meta.url));

/** `loom worker` as a child process, with the node id of its `ready` line. */
export interface LoomWorker extends TestProcess {
  /** The node id from the `ready` line. */
  ready: Promise<string>;
}

/**
 * Spawns `node bin.js worker <args>` with `env` added to this process's environment; it is
 * SIGKILLed if still alive `deadlineMs` after its start (a fleet campaign passes its own).
 */
export function spawnLoomWorker(
  args: readonly string[],
  env: Record<string, string>,
  deadlineMs = testProcessDeadlineMs,
): LoomWorker {
  if (!existsSync(loomBin)) throw new Error(`${loomBin} is missing: run pnpm build first`);
  const worker = spawnTestProcess(loomBin, {
    args: ['worker', ...args],
    env,
    nodeArgs: [],
    name: 'loom worker',
    deadlineMs,
  });
  const ready = worker.line('loom: worker ').then((text) => text.split(' ')[2] as string);
  // A worker that fails to boot rejects `ready`; callers that never await it must not crash.
  ready.catch(() => undefined);
  return Object.assign(worker, { ready });
}

/** The numbers of a `drained` line (`--json` off). */
export function parseDrained(line: string): {
  inFlight: number;
  finished: number;
  handedBack: number;
  queueItemsHandedBack: number;
} {
  const match =
    /drained: (\d+) in flight, (\d+) finished, (\d+) handed back, (\d+) queue items handed back/.exec(
      line,
    );
  if (match === null) throw new Error(`not a drained line: ${line}`);
  const [, inFlight, finished, handedBack, queueItemsHandedBack] = match.map(Number) as number[];
  return {
    inFlight: inFlight as number,
    finished: finished as number,
    handedBack: handedBack as number,
    queueItemsHandedBack: queueItemsHandedBack as number,
  };
}
