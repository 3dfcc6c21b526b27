// view.searchRuns and view.runCounts, the runs page of the dashboard, on a real SQLite file, real
// Postgres and the memory backend: filters, both sorts in both directions, keyset paging forwards
// and back, counts per status, the typed errors, and how many queries a page and the counts cost.
import type { Backend, EventStore, ExecutionStatus, WaitKind } from '@loom/event-runtime';
import { openMemory } from '@loom/event-runtime';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunSearch, RunSummary, RunWaiting } from '../src/index.js';
import {
  type PageReader,
  postgresPageReader,
  sqlitePageReader,
} from '../src/internal/page-reader.js';
import { type View, viewOver } from '../src/open-view.js';
import { dbTargets, pgUrl } from './db-targets.js';

const { targets, cleanup } = dbTargets('view-run-search');
afterAll(cleanup);

const base = 1_700_000_000_000;
const runCount = 60;

/**
 * How run `i` ends: every fifth fails, every seventh is cancelled, some wait, the rest complete.
 * Those suspended at multiples of 11 and 13 say nothing of what they wait for (rows as a writer
 * older than the `waiting_for` column left them: a wake time or none); the others say.
 */
function plan(i: number): {
  status: ExecutionStatus;
  end?: string;
  wakeAtMs?: number;
  waitingFor?: WaitKind[];
} {
  const later = base + 10_000_000;
  if (i % 5 === 0) return { status: 'settled', end: 'execution.failed' };
  if (i % 7 === 0) return { status: 'settled', end: 'execution.cancelled' };
  if (i % 11 === 0) return { status: 'suspended', wakeAtMs: later };
  if (i % 13 === 0) return { status: 'suspended' };
  if (i % 17 === 0) return { status: 'running' };
  if (i % 19 === 0)
    return { status: 'suspended', wakeAtMs: later, waitingFor: ['timer', 'approval'] };
  if (i % 23 === 0) return { status: 'suspended', waitingFor: ['question'] };
  if (i === 29) return { status: 'suspended', wakeAtMs: later, waitingFor: ['timer', 'signal'] };
  if (i === 31) return { status: 'suspended', waitingFor: ['child'] };
  if (i === 37) return { status: 'suspended', waitingFor: ['signal', 'approval'] };
  if (i === 41) return { status: 'suspended', wakeAtMs: later, waitingFor: ['timer'] };
  return { status: 'settled', end: 'execution.completed' };
}

/**
 * Run `r-<i>` of flow `alpha` (even) or `beta` (odd), version `1` or `2` by thirds, created at
 * base + i s, changed last at base + ((i × 37) mod 60) min: creation and last change disagree on
 * the order, and some runs share a last change (the id breaks the tie).
 */
const runId = (i: number) => `r-${String(i).padStart(3, '0')}`;
const createdOf = (i: number) => base + i * 1_000;
const updatedOf = (i: number) => base + ((i * 37) % 60) * 60_000 + (i % 3 === 0 ? 0 : 1);
/** A running run changed last when it started. */
const changedAt = (i: number) => (plan(i).status === 'running' ? createdOf(i) : updatedOf(i));

async function seed(events: EventStore): Promise<void> {
  for (let i = 0; i < runCount; i += 1) {
    const id = runId(i);
    const how = plan(i);
    const flow = i % 2 === 0 ? 'alpha' : 'beta';
    const version = i % 3 === 0 ? '1' : '2';
    const started = {
      executionId: id,
      sequence: 0,
      type: 'execution.started',
      payload: { flow, version, input: { i } },
      at: createdOf(i),
    };
    if (how.end === undefined) {
      await events.append([{ ...started, at: createdOf(i) }], {
        status: 'running',
      });
      if (how.status === 'suspended') {
        await events.append(
          [
            {
              executionId: id,
              sequence: 1,
              type: 'execution.suspended',
              payload: how.wakeAtMs === undefined ? {} : { wakeAtMs: how.wakeAtMs },
              at: updatedOf(i),
            },
          ],
          {
            status: 'suspended',
            ...(how.wakeAtMs === undefined ? {} : { wakeAtMs: how.wakeAtMs }),
            ...(how.waitingFor === undefined ? {} : { waitingFor: how.waitingFor }),
          },
        );
      }
      continue;
    }
    await events.append([started], { status: 'running' });
    const payload =
      how.end === 'execution.failed'
        ? { error: { name: 'Error', message: 'card declined' } }
        : how.end === 'execution.cancelled'
          ? { reason: 'cancelled by ana: duplicate' }
          : { output: { ok: true } };
    await events.append(
      [{ executionId: id, sequence: 1, type: how.end, payload, at: updatedOf(i) }],
      { status: 'settled' },
    );
  }
}

/** Wraps every method of `target`, counting calls by name into `calls`. */
function counting<T extends object>(target: T, calls: Map<string, number>, prefix: string): T {
  return new Proxy(target, {
    get(object, property) {
      const value = Reflect.get(object, property, object);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const name = `${prefix}${String(property)}`;
        calls.set(name, (calls.get(name) ?? 0) + 1);
        return value.apply(object, args);
      };
    },
  });
}

/** Every page of `search`, following nextCursor. */
async function allPages(view: View, search: RunSearch): Promise<RunSummary[][]> {
  const pages: RunSummary[][] = [];
  let after: string | undefined;
  for (;;) {
    const page = await view.searchRuns({ ...search, ...(after === undefined ? {} : { after }) });
    pages.push(page.runs);
    if (page.nextCursor === null) return pages;
    after = page.nextCursor;
    if (pages.length > runCount) throw new Error('paging does not end');
  }
}

/** Ids of the seeded runs matching `keep`, in the order `sort` asks. */
function expected(
  keep: (i: number) => boolean,
  sort: 'updated' | 'created',
  order: 'asc' | 'desc',
): string[] {
  const rows = Array.from({ length: runCount }, (_, i) => i).filter(keep);
  const value = (i: number) => (sort === 'updated' ? changedAt(i) : createdOf(i));
  rows.sort((a, b) => value(a) - value(b) || (runId(a) < runId(b) ? -1 : 1));
  if (order === 'desc') rows.reverse();
  return rows.map(runId);
}

const memory = {
  name: 'memory' as const,
  open: async (): Promise<Backend> => openMemory(),
};

describe.each([...targets, memory])('searchRuns and runCounts on $name', (target) => {
  const calls = new Map<string, number>();
  let view: View;
  let pool: pg.Pool | undefined;

  beforeAll(async () => {
    const backend = await target.open();
    await seed(backend.events);
    let pages: PageReader | undefined;
    if (target.name === 'sqlite') {
      pages = sqlitePageReader((backend.events as unknown as { database: never }).database);
    } else if (target.name === 'postgres') {
      pool = new pg.Pool({ connectionString: pgUrl });
      const schema = new URL((target as { db: string }).db).searchParams.get('schema') as string;
      pages = postgresPageReader(counting(pool, calls, 'pg.'), schema);
    }
    view = viewOver(
      { ...backend, events: counting(backend.events, calls, 'store.') as EventStore },
      pages === undefined ? undefined : counting(pages, calls, 'pages.'),
    );
  });
  afterAll(async () => {
    await view?.close();
    await pool?.end();
  });

  it('pages every run exactly once in each sort and direction, forwards and back', async () => {
    for (const sort of ['updated', 'created'] as const) {
      for (const order of ['desc', 'asc'] as const) {
        const pages = await allPages(view, { sort, order, limit: 7 });
        expect(pages.map((page) => page.length)).toEqual([7, 7, 7, 7, 7, 7, 7, 7, 4]);
        expect(pages.flat().map((run) => run.id)).toEqual(expected(() => true, sort, order));
      }
    }
    // Back from the third page: the second, then the first (no previous cursor on it).
    const first = await view.searchRuns({ limit: 7 });
    expect(first.prevCursor).toBeNull();
    const second = await view.searchRuns({ limit: 7, after: first.nextCursor as string });
    const third = await view.searchRuns({ limit: 7, after: second.nextCursor as string });
    const back = await view.searchRuns({ limit: 7, before: third.prevCursor as string });
    expect(back.runs.map((run) => run.id)).toEqual(second.runs.map((run) => run.id));
    const front = await view.searchRuns({ limit: 7, before: back.prevCursor as string });
    expect(front.runs.map((run) => run.id)).toEqual(first.runs.map((run) => run.id));
    expect(front.prevCursor).toBeNull();
    expect(front.nextCursor).not.toBeNull();
  });

  it('filters by id prefix, flow, version, status, waiting and time range, each and together', async () => {
    const ids = async (search: RunSearch) =>
      (await allPages(view, { ...search, limit: 500 })).flat().map((run) => run.id);
    expect(await ids({ idPrefix: 'r-01' })).toEqual(
      expected((i) => runId(i).startsWith('r-01'), 'updated', 'desc'),
    );
    expect(await ids({ flow: 'beta' })).toEqual(expected((i) => i % 2 === 1, 'updated', 'desc'));
    expect(await ids({ version: '1', flow: 'alpha' })).toEqual(
      expected((i) => i % 3 === 0 && i % 2 === 0, 'updated', 'desc'),
    );
    expect(await ids({ status: 'failed' })).toEqual(
      expected((i) => i % 5 === 0, 'updated', 'desc'),
    );
    expect(await ids({ status: 'settled', sort: 'created', order: 'asc' })).toEqual(
      expected((i) => plan(i).status === 'settled', 'created', 'asc'),
    );
    // A row that says what it waits for is found by each kind it names; one that does not, by
    // its wake time alone (timer, or input without one).
    const waitsFor = (i: number, kind: RunWaiting) => {
      const { status, wakeAtMs, waitingFor } = plan(i);
      if (status !== 'suspended') return false;
      if (waitingFor === undefined)
        return (
          (kind === 'timer') === (wakeAtMs !== undefined) && (kind === 'timer' || kind === 'input')
        );
      return kind === 'input' ? waitingFor.some((k) => k !== 'timer') : waitingFor.includes(kind);
    };
    for (const kind of ['timer', 'signal', 'approval', 'question', 'child', 'input'] as const) {
      const want = expected((i) => waitsFor(i, kind), 'updated', 'desc');
      expect([kind, await ids({ waiting: kind })]).toEqual([kind, want]);
      expect(want.length).toBeGreaterThan(0);
    }
    // The exact sets, so the predicate above cannot drift into agreeing with a wrong search.
    expect((await ids({ waiting: 'approval' })).sort()).toEqual([
      'r-019',
      'r-037',
      'r-038',
      'r-057',
    ]);
    expect((await ids({ waiting: 'question' })).sort()).toEqual(['r-023', 'r-046']);
    expect((await ids({ waiting: 'signal' })).sort()).toEqual(['r-029', 'r-037']);
    expect(await ids({ waiting: 'child' })).toEqual(['r-031']);
    expect(await ids({ waiting: 'approval', flow: 'beta' })).toEqual(
      expected((i) => i % 2 === 1 && waitsFor(i, 'approval'), 'updated', 'desc'),
    );
    const from = base + 10 * 60_000;
    const before = base + 20 * 60_000;
    expect(await ids({ updatedFromMs: from, updatedBeforeMs: before, flow: 'alpha' })).toEqual(
      expected(
        (i) => i % 2 === 0 && changedAt(i) >= from && changedAt(i) < before,
        'updated',
        'desc',
      ),
    );
    expect(await ids({ idPrefix: 'nope' })).toEqual([]);
  });

  it('says how a run ended in its summary: a failure, a cancel with who and why', async () => {
    const failed = await view.searchRuns({ idPrefix: 'r-005', limit: 1 });
    expect(failed.runs[0]).toMatchObject({ status: 'failed', terminalReason: 'card declined' });
    const cancelled = await view.searchRuns({ idPrefix: 'r-007', limit: 1 });
    expect(cancelled.runs[0]).toMatchObject({
      status: 'cancelled',
      terminalReason: 'cancelled by ana: duplicate',
    });
  });

  it('counts per status under the other filters', async () => {
    const tally = (keep: (i: number) => boolean) => {
      const counts = {
        running: 0,
        suspended: 0,
        completed: 0,
        failed: 0,
        cancelled: 0,
        continued: 0,
        total: 0,
      };
      for (let i = 0; i < runCount; i += 1) {
        if (!keep(i)) continue;
        const how = plan(i);
        const key =
          how.end === 'execution.failed'
            ? 'failed'
            : how.end === 'execution.cancelled'
              ? 'cancelled'
              : how.end === 'execution.completed'
                ? 'completed'
                : how.status === 'running'
                  ? 'running'
                  : 'suspended';
        counts[key] += 1;
        counts.total += 1;
      }
      return counts;
    };
    expect(await view.runCounts()).toEqual(tally(() => true));
    // The status filter is ignored: the counts are what each status tab would hold.
    expect(await view.runCounts({ flow: 'beta', status: 'failed' })).toEqual(
      tally((i) => i % 2 === 1),
    );
  });

  it('refuses bad parameters with INVALID_ARGUMENT naming each', async () => {
    const refused = async (search: RunSearch, path: string) =>
      expect(view.searchRuns(search)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        fields: { path },
      });
    await refused({ limit: 0 }, 'limit');
    await refused({ limit: 501 }, 'limit');
    await refused({ status: 'sleeping' as never }, 'status');
    await refused({ sort: 'name' as never }, 'sort');
    await refused({ order: 'up' as never }, 'order');
    await refused({ waiting: 'sleep' as never }, 'waiting');
    await refused({ after: 'not-a-cursor' }, 'after');
    await refused({ updatedFromMs: -1 }, 'updatedFromMs');
    await refused({ updatedFromMs: 5, updatedBeforeMs: 5 }, 'updatedBeforeMs');
    const first = await view.searchRuns({ limit: 2 });
    // A cursor of one sort does not page another: it would skip or repeat runs.
    await refused({ sort: 'created', after: first.nextCursor as string }, 'after');
    await refused(
      { after: first.nextCursor as string, before: first.nextCursor as string },
      'before',
    );
    await expect(view.runCounts({ idPrefix: 'x'.repeat(513) })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      fields: { path: 'idPrefix' },
    });
  });
});

describe.each(targets)('what a runs page costs on $name', (target) => {
  const calls = new Map<string, number>();
  let view: View;
  let pool: pg.Pool | undefined;

  beforeAll(async () => {
    const backend = await target.open();
    let pages: PageReader;
    if (target.name === 'sqlite') {
      pages = sqlitePageReader((backend.events as unknown as { database: never }).database);
    } else {
      pool = new pg.Pool({ connectionString: pgUrl });
      const schema = new URL(target.db).searchParams.get('schema') as string;
      pages = postgresPageReader(counting(pool, calls, 'pg.'), schema);
    }
    view = viewOver(
      { ...backend, events: counting(backend.events, calls, 'store.') as EventStore },
      counting(pages, calls, 'pages.'),
    );
  });
  afterAll(async () => {
    await view?.close();
    await pool?.end();
  });

  it('a page of settled flow runs is two queries (index, logs), the counts one', async () => {
    calls.clear();
    const page = await view.searchRuns({ status: 'settled', limit: 20 });
    expect(page.runs).toHaveLength(20);
    const pageCalls = Object.fromEntries(calls);
    calls.clear();
    await view.runCounts({ flow: 'alpha' });
    const countCalls = Object.fromEntries(calls);
    if (target.name === 'sqlite') {
      expect(pageCalls).toEqual({ 'pages.searchRows': 1, 'pages.logs': 1 });
      expect(countCalls).toEqual({ 'pages.countRows': 1 });
    } else {
      expect(pageCalls).toEqual({ 'pages.searchRows': 1, 'pages.logs': 1, 'pg.query': 2 });
      expect(countCalls).toEqual({ 'pages.countRows': 1, 'pg.query': 1 });
    }
  });
});
