// A new user's crash, with the dashboard open: a worker with the default settings is SIGKILLed
// inside an approved remote_mutation tool (the refund), an operator process (what `loom serve`
// and `loom approve` hold) is open, and the worker is restarted at once. The restarted worker's
// boot recovery round must take the run over and offer the interrupted call, as
// docs/getting-started.md promises: an operator registers no flow and drives nothing, so it must
// neither take the dead worker's leases (it cannot run them, and a lease it holds reads as a live
// owner's) nor count as a live node. SQLite file and Postgres; real child processes and SIGKILL.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Approval } from '@loom/agent-loop';
import {
  killTestProcesses,
  spawnTestProcess,
  type TestProcess,
  until,
} from '@loom/event-runtime/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openOperator, openView } from '../src/index.js';
import { dbTargets } from './db-targets.js';
import { calls } from './interrupted-life.js';

const worker = fileURLToPath(new URL('./refund-worker.ts', import.meta.url));
const { dir, targets, cleanup } = dbTargets('view-restart');
afterAll(async () => {
  await killTestProcesses();
  await cleanup();
});

function spawnWorker(env: Record<string, string>): TestProcess {
  return spawnTestProcess(worker, { env, deadlineMs: 50_000 });
}

describe.each(targets)('a worker restarted with a dashboard open on $name', (target) => {
  beforeAll(async () => (await target.open()).close());

  it("the restarted worker's boot round offers the interrupted refund, the dashboard took nothing", async () => {
    const runId = `${target.name}-refund`;
    const sideChannel = join(dir, `${target.name}-refund.calls`);
    const env = { ...target.env, RUN_ID: runId, SIDE_CHANNEL: sideChannel };

    const first = spawnWorker(env);
    await until(
      () => first.output().includes('started'),
      'the first life to start the run',
      20_000,
    );
    const view = await openView({ db: target.db });
    let approval: Approval | undefined;
    await until(
      async () => {
        approval = (await view.pendingApprovals()).find((a) => a.runId === runId);
        return approval !== undefined;
      },
      'the refund approval',
      20_000,
    );
    const approver = await openOperator({ db: target.db });
    await approver.approve((approval as Approval).id, { by: 'ana' });
    await approver.close();
    await until(() => calls(sideChannel).length === 1, 'the refund to start', 20_000);
    first.child.kill('SIGKILL');
    expect((await first.exit).signal).toBe('SIGKILL');

    // The user opens the dashboard to look at the crash, and restarts the worker at once.
    const dashboard = await openOperator({ db: target.db });
    try {
      const second = spawnWorker({ ...env, LIFE: 'boot' });
      expect((await second.ended()).code, second.output()).toBe(0);
      const line = /^boot (.*)$/m.exec(second.output());
      expect(line, second.output()).not.toBeNull();
      const boot = JSON.parse((line as RegExpExecArray)[1] as string) as {
        resumed: string[];
        approval: Approval | null;
      };
      // Its first recovery round, the one it runs as it boots, took the run over.
      expect(boot.resumed).toEqual([runId]);
      expect(boot.approval).toMatchObject({
        kind: 'interrupted_side_effect',
        status: 'pending',
        request: { tool: 'refund', sideEffect: 'remote_mutation' },
      });
      expect(calls(sideChannel)).toHaveLength(1);
    } finally {
      await dashboard.close();
      await view.close();
    }
  }, 60_000);
});
