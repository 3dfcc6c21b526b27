// The projection commands, on a real SQLite file and the real Postgres: init, a projector (the
// built `loom` binary as a child process) SIGKILLed mid-run and restarted (its tables then equal a
// fresh rebuild from the log), spend, and the SPEND column of `loom runs` (the CLI in process).
import { fileURLToPath } from 'node:url';
import type { Backend } from '@loom/event-runtime';
import { killTestProcesses, spawnTestProcess } from '@loom/event-runtime/testing';
import { createRuntime } from '@loom/workflow-runtime';
import { afterAll, describe, expect, it } from 'vitest';
import type { ProjectorStats, SpendRow } from '../src/index.js';
import { parseDbUrl } from '../src/internal/db-url.js';
import { openProjectionDb } from '../src/projection/projection-db.js';
import { eventually, loomInProcess, populate, runtimeOn } from './fixture.js';

import { projectionRows, projectionTargets, spend } from './projection-support.js';

const { targets, cleanup } = projectionTargets('view-proj-cli');
afterAll(async () => {
  await killTestProcesses();
  await cleanup();
});

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

/**
 * `loom projections run --batch 10 --progress` as a child, SIGKILLed once it reported `flushes`
 * transactions. Resolves with the progress lines it printed and how it ended.
 */
async function killMidRun(
  db: string,
  flushes: number,
): Promise<{ lines: string[]; signal: string | null }> {
  const projector = spawnTestProcess(bin, {
    args: ['projections', 'run', '--batch', '10', '--progress', '--db', db],
    nodeArgs: [],
    inheritEnv: false,
    env: { PATH: process.env.PATH ?? '' },
    name: 'loom projections run',
  });
  const flushed = () =>
    projector
      .stderr()
      .split('\n')
      .slice(0, -1)
      .filter((line) => line.startsWith('flushed '));
  await projector
    .waitFor(() => flushed().length >= flushes, `${flushes} flushes`, 60_000)
    .then(() => projector.child.kill('SIGKILL'))
    .catch(() => undefined); // ended before (or stuck: then killed at its deadline)
  const { signal } = await projector.exit;
  return { lines: flushed(), signal };
}

describe.each(targets.map((t) => [t.name, t] as const))(
  'loom projections on %s',
  (_name, target) => {
    // One test per stage, in order (each needs the one before): a slow box shows which stage was
    // slow, and no test waits for the whole chain.
    let backend: Backend;
    let results: Awaited<ReturnType<typeof spend>>;
    let foldedByAgent: SpendRow[] = [];
    let total = 0;
    let db: string;
    let atKill: { events: number };
    afterAll(async () => {
      await backend?.close();
    });

    it('stage 1: a log of agent runs with spend and 600 bulk runs, every event readable', async () => {
      backend = await target.open();
      const running = runtimeOn(backend);
      await populate(running, backend);
      results = await spend(running.flows, 2);
      await running.flows.idle();
      // Enough events that the projector is killed long before the end: 600 runs of 10 events,
      // appended 50 runs at a time (one commit each, not 600 in a row).
      for (let first = 0; first < 600; first += 50) {
        await Promise.all(
          Array.from({ length: 50 }, (_, offset) =>
            backend.events.append(
              Array.from({ length: 10 }, (_, sequence) => ({
                executionId: `bulk-${String(first + offset).padStart(4, '0')}`,
                sequence,
                type: sequence === 0 ? 'execution.started' : 'step.started',
                payload:
                  sequence === 0
                    ? { flow: 'bulk', version: '1', input: first + offset }
                    : { index: sequence, name: `s${sequence}` },
              })),
            ),
          ),
        );
      }
      // The log's length from each run's own log; a Postgres readAll stops below the oldest open
      // transaction of the cluster, so wait until it shows every event before projecting.
      for (const row of await backend.events.findExecutions({ limit: 10_000 })) {
        total += (await backend.events.read(row.executionId, { limit: 10_000 })).length;
      }
      expect(total).toBeGreaterThan(6_000);
      await eventually(async () => {
        let seen = 0;
        let position = 0;
        for (;;) {
          const page = await backend.events.readAll({ afterPosition: position, limit: 10_000 });
          if (page.length === 0) break;
          seen += page.length;
          position = page.at(-1)?.position ?? position;
        }
        return seen === total ? true : undefined;
      }, 'readAll to show every event');
    });

    it('stage 2: before the projection tables exist, spend folds the logs; init creates them once', async () => {
      db = target.db;
      const before = await loomInProcess(['spend', '--by', 'agent', '--db', db, '--json']);
      expect(before.code, before.stderr).toBe(0);
      expect(before.stderr).toContain('folding the logs');
      foldedByAgent = JSON.parse(before.stdout) as SpendRow[];
      expect(foldedByAgent.find((r) => r.key === 'spender')).toMatchObject({
        modelCalls: 2,
        costUsd: results.reduce((a, r) => a + r.usage.costUsd, 0),
      });
      const byDay = await loomInProcess(['spend', '--db', db]);
      expect(byDay.code, byDay.stderr).toBe(0);
      expect(byDay.stdout).toMatch(/\d{4}-\d{2}-\d{2}/);

      const init = await loomInProcess(['projections', 'init', '--db', db, '--json']);
      expect(init.code).toBe(0);
      expect(JSON.parse(init.stdout)).toEqual({ created: true });
      const again = await loomInProcess(['projections', 'init', '--db', db]);
      expect(again.stdout).toContain('exist already');
    });

    it('stage 3: a projector killed mid-run resumes at its checkpoint, nothing folded twice or missed', async () => {
      // A projector killed after 5 transactions of 10 events, with hundreds left to do.
      const killed = await killMidRun(db, 5);
      expect(killed.signal).toBe('SIGKILL');
      expect(killed.lines.length).toBeGreaterThanOrEqual(5);
      const probe = await openProjectionDb(parseDbUrl(db), true);
      atKill = (await projectionRows(probe)).checkpoint;
      expect(atKill.events).toBeGreaterThanOrEqual(50);
      expect(atKill.events).toBeLessThan(total);

      // Restarted: it resumes at the checkpoint; nothing folded twice, nothing missed.
      const resumed = await loomInProcess(['projections', 'run', '--once', '--db', db, '--json']);
      expect(resumed.code, resumed.stderr).toBe(0);
      const stats = JSON.parse(resumed.stdout) as ProjectorStats;
      expect(stats.delivered).toBe(total - atKill.events);
      expect(stats.applied).toBe(total - atKill.events);
      const kept = await projectionRows(probe);
      await probe.close();
      expect(kept.checkpoint.events).toBe(total);
      const { memoryProjectionDb } = await import('./projection-support.js');
      const { catchUpProjections } = await import('../src/index.js');
      const fresh = await memoryProjectionDb();
      await catchUpProjections({ events: backend.events, projections: fresh });
      expect(kept).toEqual(await projectionRows(fresh));
      await fresh.close();
    });

    it('stage 4: status, spend by agent and by run, and runs with a SPEND column', async () => {
      const status = await loomInProcess(['projections', 'status', '--db', db, '--json']);
      expect(JSON.parse(status.stdout)).toMatchObject({
        checkpoint: { events: total },
        counts: { running: 600, suspended: 3 },
      });

      const byAgent = await loomInProcess(['spend', '--by', 'agent', '--db', db, '--json']);
      expect(byAgent.code).toBe(0);
      // From the projection now (current): the same rows the fold of the logs gave.
      expect(byAgent.stderr).not.toContain('folding the logs');
      const rows = JSON.parse(byAgent.stdout) as SpendRow[];
      expect(rows).toEqual(foldedByAgent);
      expect(rows.find((r) => r.key === 'spender')).toMatchObject({
        modelCalls: 2,
        costUsd: results.reduce((a, r) => a + r.usage.costUsd, 0),
      });
      const human = await loomInProcess(['spend', '--by', 'run', '--db', db]);
      expect(human.stdout).toContain('spend-0');
      const badDay = await loomInProcess(['spend', '--from', 'yesterday', '--db', db]);
      expect(badDay.code).toBe(2);
      expect(badDay.stderr).toContain('INVALID_ARGUMENT');

      // From the projection too, loom runs says what each suspended run waits for.
      const suspended = JSON.parse(
        (await loomInProcess(['runs', '--status', 'suspended', '--db', db, '--json'])).stdout,
      ) as { runs: { id: string; waitingFor?: string }[] };
      expect(suspended.runs.length).toBe(3);
      for (const run of suspended.runs)
        expect(run.waitingFor).toMatch(/^(approval|answer|signal) /);
      const runs = await loomInProcess(['runs', '--flow', 'agent:spender', '--db', db, '--json']);
      const page = JSON.parse(runs.stdout) as {
        runs: { id: string; spend: { costUsd: number } }[];
      };
      expect(page.runs.map((r) => [r.id, r.spend.costUsd])).toEqual(
        results.map((r) => [r.runId, r.usage.costUsd]),
      );
      const table = await loomInProcess(['runs', '--flow', 'agent:spender', '--db', db]);
      expect(table.stdout).toContain('SPEND');
      expect(table.stdout).toContain(`$${(results[0]?.usage.costUsd ?? 0).toFixed(4)}`);
    });
  },
);

describe('loom runs without projection tables', () => {
  it('folds spend from the agent runs’ logs', async () => {
    const { targets: fresh, cleanup: drop } = projectionTargets('view-proj-nolog');
    const target = fresh[0];
    if (target === undefined) throw new Error('no target');
    try {
      const backend = await target.open();
      const flows = createRuntime({ backend, flows: [], timerPollMs: 0 });
      const results = await spend(flows, 1);
      await backend.close();
      const runs = await loomInProcess(['runs', '--db', target.db, '--json']);
      expect(runs.code).toBe(0);
      const page = JSON.parse(runs.stdout) as {
        runs: { id: string; spend: { costUsd: number; modelCalls: number } }[];
      };
      expect(page.runs[0]?.spend).toMatchObject({
        modelCalls: 1,
        costUsd: results[0]?.usage.costUsd,
      });
    } finally {
      await drop();
    }
  });
});
