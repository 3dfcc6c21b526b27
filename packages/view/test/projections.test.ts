// Projections kept by subscription, on every backend (memory, a real SQLite file, the real
// Postgres): the same rows as the log view, idempotent on redelivery, resumed from the checkpoint,
// coalesced delivery, spend, and opening without tables.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { StoredEvent } from '@loom/event-runtime';
import { createRuntime } from '@loom/workflow-runtime';
import { afterAll, describe, expect, it } from 'vitest';
import {
  applyBatch,
  catchUpProjections,
  initProjections,
  openProjections,
  openView,
  projectionsOn,
  startProjector,
} from '../src/index.js';
import { parseDbUrl } from '../src/internal/db-url.js';
import { openProjectionDb } from '../src/projection/projection-db.js';
import { eventually, populate, runtimeOn } from './fixture.js';
import {
  projectionRows,
  projectionTargets,
  spend,
  tableNames,
  wholeLog,
} from './projection-support.js';

const { dir, targets, cleanup, open } = projectionTargets('view-proj');
afterAll(cleanup);

describe('opening without projection tables', () => {
  it('SQLite: PROJECTIONS_NOT_INITIALIZED names the command, and nothing is written', async () => {
    const target = targets.find((t) => t.name === 'sqlite');
    if (target === undefined) throw new Error('no sqlite target');
    const backend = await target.open();
    await backend.close();
    const path = join(dir, 'loom.db');
    const probe = await openProjectionDb(parseDbUrl(target.db), true);
    const before = await tableNames(probe);
    await probe.close();
    const size = statSync(path).size;
    const error = await openProjections({ db: target.db }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'PROJECTIONS_NOT_INITIALIZED' });
    expect((error as Error).message).toContain('loom projections init');
    await expect(startProjector({ db: target.db })).rejects.toMatchObject({
      code: 'PROJECTIONS_NOT_INITIALIZED',
    });
    const after = await openProjectionDb(parseDbUrl(target.db), true);
    expect(await tableNames(after)).toEqual(before);
    await after.close();
    expect(before.some((name) => name.startsWith('loom_projection'))).toBe(false);
    expect(statSync(path).size).toBe(size);
  });

  it('Postgres: PROJECTIONS_NOT_INITIALIZED, and the schema keeps the same tables', async () => {
    const target = targets.find((t) => t.name === 'postgres');
    if (target === undefined) throw new Error('no postgres target');
    const backend = await target.open();
    await backend.close();
    const probe = await openProjectionDb(parseDbUrl(target.db), true);
    const before = await tableNames(probe);
    await expect(openProjections({ db: target.db })).rejects.toMatchObject({
      code: 'PROJECTIONS_NOT_INITIALIZED',
    });
    await expect(startProjector({ db: target.db })).rejects.toMatchObject({
      code: 'PROJECTIONS_NOT_INITIALIZED',
    });
    expect(await tableNames(probe)).toEqual(before);
    expect(before.some((name) => name.startsWith('loom_projection'))).toBe(false);
    await probe.close();
  });

  it('a missing SQLite file stays missing (the store check comes first)', async () => {
    const path = join(dir, 'missing.db');
    await expect(openProjections({ db: `sqlite:${path}` })).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
    });
    await expect(initProjections({ db: `sqlite:${path}` })).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
    });
    expect(existsSync(path)).toBe(false);
  });
});

describe.each(['memory', 'sqlite', 'postgres'] as const)('projections on %s', (name) => {
  it('fold the same runs and approvals as the log view, with spend, idempotently', async () => {
    const target = await open(name);
    try {
      const running = runtimeOn(target.backend);
      await populate(running, target.backend);
      const results = await spend(running.flows, 3);
      await running.flows.idle();
      const first = await catchUpProjections({
        events: target.backend.events,
        projections: target.projections,
        batchSize: 7,
      });
      const log = await wholeLog(target.backend);
      expect(first.delivered).toBe(log.length);
      expect(first.applied).toBe(log.length);
      expect(first.flushes).toBe(Math.ceil(log.length / 7));
      const read = projectionsOn(target.projections);

      // The same summaries as view.runs() folds from each run's log.
      if (target.db !== undefined) {
        const view = await openView({ db: target.db, useProjections: false });
        try {
          const fromLog = (await view.runs({ limit: 1000 })).runs;
          const projected = (await read.runs({ limit: 1000 })).runs;
          // The projection keeps no waits (the view reads them from the logs): all else is equal.
          expect(projected.map(({ spend: _spend, updatedAtMs: _u, ...run }) => run)).toEqual(
            fromLog.map(({ updatedAtMs: _u, waitingFor: _w, ...run }) => run),
          );
          expect((await read.pendingApprovals()).map((a) => a.id)).toEqual(
            (await view.pendingApprovals()).map((a) => a.id),
          );
        } finally {
          await view.close();
        }
      }
      expect((await read.pendingApprovals()).map((a) => a.runId)).toEqual(['agent-1']);
      expect((await read.runs({ status: 'suspended' })).runs.map((r) => r.id)).toEqual([
        'agent-1',
        'wait-cancel',
        'wait-signal',
      ]);
      const counts = await read.counts();
      expect(counts).toMatchObject({ completed: 6, failed: 1, suspended: 3 });
      const page = await read.runs({ limit: 2 });
      expect(page.nextCursor).toBe(page.runs[1]?.id);
      const next = await read.runs({ limit: 2, after: page.nextCursor as string });
      expect((next.runs[0]?.id ?? '') > (page.nextCursor as string)).toBe(true);

      // Spend: what agent-loop itself summed per run.
      const costs = results.map((r) => r.usage.costUsd);
      expect(costs.every((c) => c > 0)).toBe(true);
      const byRun = await read.spend({ by: 'run', agent: 'spender' });
      expect(byRun.map((r) => [r.key, r.costUsd]).sort()).toEqual(
        results.map((r) => [r.runId, r.usage.costUsd]).sort(),
      );
      const byAgent = await read.spend({ by: 'agent' });
      const spender = byAgent.find((r) => r.key === 'spender');
      expect(spender?.modelCalls).toBe(3);
      expect(spender?.costUsd).toBeCloseTo(
        costs.reduce((a, b) => a + b, 0),
        12,
      );
      expect(spender?.inputTokens).toBe(results.reduce((a, r) => a + r.usage.inputTokens, 0));
      // The mailer's stub has no price: its call is counted as unknown, never as zero.
      expect(byAgent.find((r) => r.key === 'mailer')).toMatchObject({
        costUnknownCalls: 1,
        costUsd: 0,
      });
      const today = new Date().toISOString().slice(0, 10);
      const byDay = await read.spend({ by: 'day', fromDay: today, toDay: today });
      expect(byDay.map((r) => r.modelCalls)).toEqual([4]);
      const projectedRun = (await read.runs({ flow: 'agent:spender' })).runs[0];
      expect(projectedRun?.spend.costUsd).toBe(results[0]?.usage.costUsd);
      await expect(read.spend({ by: 'week' as 'day' })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });

      // Redelivery: the same events again change nothing.
      const before = await projectionRows(target.projections);
      expect(await applyBatch(target.projections, log, first.position)).toBe(0);
      expect(await projectionRows(target.projections)).toEqual(before);
      // A stale checkpoint (another projector moved it) rolls the batch back.
      await expect(applyBatch(target.projections, log, 0)).rejects.toMatchObject({
        code: 'PROJECTOR_CONFLICT',
      });
      expect(await projectionRows(target.projections)).toEqual(before);
      expect(before).toEqual(await target.rebuild());
    } finally {
      await target.close();
    }
  });

  it('a live projector follows, stops, and resumes from its checkpoint', async () => {
    const target = await open(name);
    try {
      const flows = createRuntime({
        backend: target.backend,
        flows: [],
        timerPollMs: 0,
        closeBackend: false,
      });
      const options = { events: target.backend.events, projections: target.projections };
      const projector = await startProjector(options);
      const from = projector.stats.position;
      await spend(flows, 2, 'live-a');
      const firstLog = await wholeLog(target.backend);
      const head = firstLog.at(-1)?.position;
      await eventually(
        async () => (projector.stats.position === head ? true : undefined),
        'the projector to fold every event',
      );
      await projector.close();
      await projector.done;
      expect(projector.stats.position).toBe(head);
      await spend(flows, 1, 'live-b');
      await flows.shutdown();
      const log = await wholeLog(target.backend);
      const again = await startProjector(options);
      // It resumes at the checkpoint, and is delivered only what came after it.
      expect(again.stats.position).toBe(head);
      await eventually(
        async () => (again.stats.position === log.at(-1)?.position ? true : undefined),
        'the restarted projector to catch up',
      );
      await again.close();
      const after = log.length - firstLog.length;
      expect(again.stats.delivered).toBe(after);
      expect(again.stats.applied).toBe(after);
      expect(projector.stats.applied).toBe(
        firstLog.length - firstLog.findIndex((e) => e.position === from) - 1,
      );
      expect(await projectionRows(target.projections)).toEqual(await target.rebuild());
      const spent = await projectionsOn(target.projections).spend({
        by: 'agent',
        agent: 'spender',
      });
      expect(spent[0]?.modelCalls).toBeGreaterThanOrEqual(3);
    } finally {
      await target.close();
    }
  });

  it('coalesced delivery: 1,000 events appended in a burst reach the projector in few flushes', async () => {
    const target = await open(name);
    try {
      const batchSize = 500;
      // Both start at the log's end: earlier tests' events are not part of the burst.
      const options = { events: target.backend.events, projections: target.projections, batchSize };
      const end = (await wholeLog(target.backend)).at(-1)?.position ?? 0;
      await catchUpProjections(options);
      const projector = await startProjector(options);
      expect(projector.stats.position).toBe(end);
      const seen: StoredEvent[] = [];
      const calls: number[] = [];
      const subscription = target.backend.events.subscribe(
        { batchSize, afterPosition: end },
        (batch) => {
          calls.push(batch.length);
          seen.push(...batch);
        },
      );
      // The burst: 1,000 events, as 100 appends of 10 (a streamed burst, a fan-out), all at once.
      const appends = 100;
      const perAppend = 10;
      await Promise.all(
        Array.from({ length: appends }, (_, i) =>
          target.backend.events.append(
            Array.from({ length: perAppend }, (_, sequence) => ({
              executionId: `burst-${String(i).padStart(3, '0')}`,
              sequence,
              type: sequence === 0 ? 'execution.started' : 'step.started',
              payload:
                sequence === 0
                  ? { flow: 'burst', version: null, input: i }
                  : { index: sequence, name: 's' },
            })),
          ),
        ),
      );
      const total = appends * perAppend;
      await eventually(async () => (seen.length >= total ? true : undefined), 'all 1,000 events');
      await eventually(
        async () => (projector.stats.delivered >= total ? true : undefined),
        'the projector to fold all 1,000',
      );
      await subscription.close();
      await projector.close();
      // Every event once, in the store's order.
      const log = await wholeLog(target.backend);
      const burst = log.slice(log.findIndex((e) => e.position === end) + 1);
      expect(burst).toHaveLength(total);
      expect(seen.map((e) => e.position)).toEqual(burst.map((e) => e.position));
      // The flush policy: one read per wake-up, at most batchSize events, wake-ups while a
      // handler runs fold into one read. Each call ends at a full batch or at a commit's end,
      // so calls ≤ commits + total / batchSize; in-process wake-ups fold much further.
      const bound = appends + total / batchSize;
      expect(calls.length).toBeLessThanOrEqual(bound);
      if (name !== 'postgres') {
        // In process, every append of the burst commits within one turn of the event loop:
        // the first read sees a full batch, so no more calls than full batches plus one.
        expect(calls.length).toBeLessThanOrEqual(Math.ceil(total / batchSize) + 1);
        expect(projector.stats.flushes).toBeLessThanOrEqual(Math.ceil(total / batchSize) + 1);
      }
      expect(projector.stats.flushes).toBeLessThanOrEqual(bound);
      expect(projector.stats.applied).toBe(total);
      console.log(
        `${name}: 1,000 events in ${appends} appends → subscriber calls ${calls.length}, projector flushes ${projector.stats.flushes} (bound ${bound})`,
      );
    } finally {
      await target.close();
    }
  });
});
