// The dashboard's runs page in Debian's Chromium over a real SQLite file: the layout at 1280 px,
// 1920 px and in a narrow window (nothing wider than the window, every column header in view, the
// way a run ended readable, a long output wrapped), then each control of the search (id prefix,
// flow, version, status, waiting for, time range, sort, next and previous page, the counts), the
// search kept in the address across a reload, and a live update arriving while filtered. Plus the
// read API's parameters and their typed errors over plain HTTP.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAgentRuntime, defineAgent, defineTool } from '@loom/agent-loop';
import type { Backend } from '@loom/event-runtime';
import { openSqlite } from '@loom/event-runtime/sqlite';
import { StubModel } from '@loom/reasoning';
import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Dashboard,
  type Operator,
  openOperator,
  openView,
  type RunCounts,
  type RunSearchPage,
  startDashboard,
  type View,
} from '../src/index.js';
import { http, openBrowser, openPage, until } from './dashboard-support.js';
import { failing, mailer, order, type Running, waiting } from './fixture.js';

const artifacts = fileURLToPath(new URL('../test-artifacts/', import.meta.url));
const docsImg = fileURLToPath(new URL('../../../docs/img/', import.meta.url));
/** A wait in the browser: generous, the machine is shared. */
const waitMs = 30_000;
/** Completed `order` runs beyond the others: enough for three pages of five. */
const orders = 12;

/** A flow whose output is one 3,000-character word: it must wrap, not widen the page. */
const verbose = defineFlow({ name: 'verbose' }, async (ctx) =>
  ctx.step('say', () => ({ text: 'x'.repeat(3_000) })),
);
/** A tool that reads and changes nothing (so it runs without an approval). */
const look = defineTool({
  name: 'look',
  description: 'Look around',
  input: { type: 'object', properties: {} },
  sideEffect: 'read_only',
  run: async () => 'nothing new',
});
/**
 * An agent whose first model call (a tool call, so the run goes on) spends its whole token
 * budget: it ends `limit_tokens`.
 */
const spender = defineAgent({
  name: 'spender',
  model: new StubModel({ script: () => ({ toolCalls: [{ tool: 'look', input: {} }] }) }),
  instructions: 'spend',
  tools: [look],
  limits: { tokensMax: 1 },
});

const dir = mkdtempSync(join(tmpdir(), 'loom-view-dashboard-runs-'));
const sqlitePath = join(dir, 'loom.db');
const db = `sqlite:${sqlitePath}`;
let backend: Backend;
let running: Running;
let view: View;
let operator: Operator;

beforeAll(async () => {
  mkdirSync(artifacts, { recursive: true });
  backend = await openSqlite({ path: sqlitePath, migrate: true });
  const flows = createRuntime({
    backend,
    flows: [order, failing, waiting, verbose],
    timerPollMs: 50,
  });
  running = { flows, agents: createAgentRuntime({ flows, agents: [mailer, spender] }) };
  for (let i = 0; i < orders; i += 1) {
    const id = `order-${String(i).padStart(2, '0')}`;
    await (await flows.start(order, { id: String(i) }, { executionId: id })).result();
  }
  await (await flows.start(failing, null, { executionId: 'charge-1' }))
    .result()
    .catch(() => undefined);
  await (await flows.start(verbose, null, { executionId: 'verbose-1' })).result();
  await flows.start(waiting, null, { executionId: 'wait-1' });
  await flows.start(waiting, null, { executionId: 'wait-cancelled' });
  await running.agents.start(spender, 'spend it all', { runId: 'agent-spent' });
  await running.agents.start(mailer, 'mail ana', { runId: 'agent-refused' });
  view = await openView({ db });
  operator = await openOperator({ db });
  const approval = await until(async () => {
    const approvals = await view.pendingApprovals();
    return approvals.find((a) => a.runId === 'agent-refused');
  }, 'agent-refused waiting for approval');
  await operator.reject(approval.id, { by: 'ana', note: 'not ana', endRun: true });
  await until(async () => {
    const row = (await view.searchRuns({ idPrefix: 'wait-cancelled' })).runs[0];
    return row?.status === 'suspended' ? true : undefined;
  }, 'wait-cancelled suspended');
  await operator.cancel('wait-cancelled', { by: 'ana', reason: 'duplicate order' });
  for (const [id, status] of [
    ['agent-spent', 'completed'],
    ['agent-refused', 'completed'],
    ['wait-cancelled', 'cancelled'],
    ['wait-1', 'suspended'],
  ] as const) {
    await until(async () => {
      const row = (await view.searchRuns({ idPrefix: id })).runs[0];
      return row?.status === status ? true : undefined;
    }, `${id} ${status}`);
  }
});

afterAll(async () => {
  await operator?.close();
  await view?.close();
  await running?.flows.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

/** The ids in the runs table, top to bottom. */
const tableIds = (page: Page) =>
  page
    .locator('#runs-body tr')
    .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-run')));

/** Waits until the runs table holds exactly `ids`, in that order. */
async function tableIs(page: Page, ids: readonly string[]): Promise<void> {
  let shown: Array<string | null> = [];
  try {
    await until(
      async () => {
        shown = await tableIds(page);
        return JSON.stringify(shown) === JSON.stringify(ids) ? true : undefined;
      },
      `the runs table to be [${ids.join(', ')}]`,
      waitMs,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; it shows [${shown.join(', ')}] at ${page.url()}`);
  }
}

interface Cell {
  textContent: string | null;
  scrollWidth: number;
  clientWidth: number;
  parentElement: { getAttribute(name: string): string | null } | null;
  getBoundingClientRect(): { left: number; right: number; width: number };
}

/** What the layout checks in the page: overflow, headers in view, the ending readable. */
async function layoutFacts(page: Page) {
  // Runs in the page: the DOM's types are not in this package's lib, so they are named loosely.
  return page.evaluate(() => {
    const { document, window } = globalThis as unknown as {
      document: {
        documentElement: { scrollWidth: number; clientWidth: number };
        querySelector(selector: string): Cell;
        querySelectorAll(selector: string): ArrayLike<Cell>;
      };
      window: {
        innerWidth: number;
        getComputedStyle(cell: Cell, pseudo: string): { content: string };
      };
    };
    // Seen means inside the window and inside the runs table's scroll box (which clips).
    const box = document.querySelector('#runs-pane .scroll').getBoundingClientRect();
    const seen = (cell: Cell) => {
      const rect = cell.getBoundingClientRect();
      return (
        rect.width > 0 &&
        rect.left >= Math.max(0, box.left) - 0.5 &&
        rect.right <= Math.min(window.innerWidth, box.right) + 0.5
      );
    };
    const scroller = document.querySelector('#runs-pane .scroll');
    return {
      overflowPx: document.documentElement.scrollWidth - document.documentElement.clientWidth,
      tableOverflowPx: scroller.scrollWidth - scroller.clientWidth,
      headers: Array.from(document.querySelectorAll('#runs thead th')).map((th) => ({
        text: th.textContent,
        inView: seen(th) && th.scrollWidth <= th.clientWidth + 1,
      })),
      // In a narrow window each cell is labelled with its column instead (a card per run).
      labels: Array.from(document.querySelectorAll('#runs-body tr:first-child td')).map((td) => {
        const label = window.getComputedStyle(td, '::before').content;
        return seen(td) ? label.replace(/^"|"$/g, '') : `${label} (out of view)`;
      }),
      reasons: Array.from(document.querySelectorAll('#runs-body td.reason')).map((cell) => ({
        run: cell.parentElement?.getAttribute('data-run'),
        text: cell.textContent,
        clipped: cell.scrollWidth > cell.clientWidth + 1 || !seen(cell),
      })),
    };
  });
}

describe('the runs page in Chromium', () => {
  let dashboard: Dashboard;
  let browser: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    dashboard = await startDashboard({ db, port: 0, pollMs: 100 });
    browser = await openBrowser(join(dir, 'chromium-profile'));
    page = await openPage(browser, dashboard.urlWithToken, pageErrors);
    await page.waitForSelector('tr[data-run="agent-spent"]', { timeout: waitMs });
  });
  afterAll(async () => {
    await browser?.close();
    await dashboard?.close();
  });

  for (const [width, height] of [
    [1920, 1080],
    [1280, 800],
    [760, 900],
    [480, 800],
  ] as const) {
    it(`at ${width} px: no horizontal overflow, every column's name in view, each ending said in full`, async () => {
      await page.setViewportSize({ width, height });
      await page.getByRole('button', { name: 'verbose-1', exact: true }).click();
      await page.waitForSelector('#detail-head h2:text-is("verbose-1")', { timeout: waitMs });
      await page.waitForSelector('#detail-head pre.value:has-text("xxxxxxxx")', {
        timeout: waitMs,
      });
      const facts = await layoutFacts(page);
      expect(facts.overflowPx).toBeLessThanOrEqual(0);
      expect(facts.tableOverflowPx).toBeLessThanOrEqual(0);
      expect(facts.headers.map((h) => h.text)).toEqual([
        'Run',
        'Flow',
        'Status',
        'Steps',
        'Approvals',
        'Updated (UTC)',
        'Reason',
      ]);
      if (width > 600) {
        expect(facts.headers.filter((h) => !h.inView)).toEqual([]);
      } else {
        expect(facts.labels).toEqual(facts.headers.map((h) => h.text));
      }
      const reasonOf = (run: string) => facts.reasons.find((r) => r.run === run);
      expect(reasonOf('agent-spent')).toMatchObject({ text: 'limit_tokens', clipped: false });
      expect(reasonOf('agent-refused')).toMatchObject({
        text: 'approval_rejected',
        clipped: false,
      });
      expect(reasonOf('wait-cancelled')).toMatchObject({
        text: 'cancelled by ana: duplicate order',
        clipped: false,
      });
      expect(reasonOf('charge-1')).toMatchObject({
        text: "step 0 ('charge-card') of execution charge-1 failed: card declined",
        clipped: false,
      });
      // A non-goal ending of an agent is marked, a goal is not.
      expect(
        await page.locator('tr[data-run="agent-spent"] td.reason').getAttribute('class'),
      ).toContain('warn');
      await page.screenshot({ path: join(artifacts, `dashboard-runs-${width}.png`) });
      if (width >= 1280) {
        // docs/img/dashboard-runs-<width>.png is this screenshot, refreshed on purpose.
        if (process.env.LOOM_UPDATE_DOCS_IMG === '1') {
          copyFileSync(
            join(artifacts, `dashboard-runs-${width}.png`),
            join(docsImg, `dashboard-runs-${width}.png`),
          );
        }
      }
    });
  }

  it('searches by id prefix, and keeps the search in the address across a reload', async () => {
    await page.setViewportSize({ width: 1400, height: 900 });
    await page.locator('#search-id').fill('order-0');
    await tableIs(
      page,
      Array.from({ length: 10 }, (_, i) => `order-0${9 - i}`),
    );
    expect(new URL(page.url()).searchParams.get('id')).toBe('order-0');
    await page.reload();
    await tableIs(
      page,
      Array.from({ length: 10 }, (_, i) => `order-0${9 - i}`),
    );
    expect(await page.locator('#search-id').inputValue()).toBe('order-0');
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.waitForSelector('tr[data-run="charge-1"]', { timeout: waitMs });
    expect(new URL(page.url()).search).toBe('');
  });

  it('filters by flow, version, status and what a run waits for; the counts follow the filters', async () => {
    await page.locator('#filter-flow').fill('waiter');
    await tableIs(page, ['wait-cancelled', 'wait-1']);
    await page.waitForSelector('#status-counts button[data-status="all"][data-count="2"]', {
      timeout: waitMs,
    });
    expect(
      await page
        .locator('#status-counts button[data-status="cancelled"]')
        .getAttribute('data-count'),
    ).toBe('1');
    await page.selectOption('#status-filter', 'suspended');
    await tableIs(page, ['wait-1']);
    await page.selectOption('#waiting-filter', 'timer');
    await tableIs(page, []);
    await page.selectOption('#waiting-filter', 'input');
    await tableIs(page, ['wait-1']);
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.locator('#filter-flow').fill('order');
    await page.locator('#filter-version').fill('2');
    await page.waitForSelector(
      `#status-counts button[data-status="completed"][data-count="${orders}"]`,
      {
        timeout: waitMs,
      },
    );
    await page.locator('#filter-version').fill('1');
    await tableIs(page, []);
    await page.waitForSelector('#status-counts button[data-status="all"][data-count="0"]', {
      timeout: waitMs,
    });
    // A count is also a filter: click it.
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.locator('#status-counts button[data-status="failed"]').click();
    await tableIs(page, ['charge-1']);
    expect(await page.locator('#status-filter').inputValue()).toBe('failed');
    await page.getByRole('button', { name: 'Clear' }).click();
  });

  it('filters by the time of the last change (UTC), from and before', async () => {
    const all = await view.searchRuns({ limit: 500 });
    const oldest = Math.min(...all.runs.map((run) => run.updatedAtMs));
    // The inputs take whole seconds: the second the oldest run changed in.
    const second = new Date(oldest).toISOString().slice(0, 19);
    const secondMs = Date.parse(`${second}Z`);
    await page.locator('#updated-from').fill(second);
    await page.locator('#updated-from').dispatchEvent('change');
    await tableIs(
      page,
      all.runs.map((run) => run.id),
    );
    expect(new URL(page.url()).searchParams.get('updatedFrom')).toBe(String(secondMs));
    await page.locator('#updated-from').fill('');
    await page.locator('#updated-from').dispatchEvent('change');
    await page.locator('#updated-before').fill(second);
    await page.locator('#updated-before').dispatchEvent('change');
    await tableIs(page, []);
    expect(new URL(page.url()).searchParams.get('updatedBefore')).toBe(String(secondMs));
    expect((await view.searchRuns({ updatedBeforeMs: secondMs })).runs).toEqual([]);
    await page.getByRole('button', { name: 'Clear' }).click();
    await tableIs(
      page,
      all.runs.map((run) => run.id),
    );
  });

  it('sorts by creation or last change, both ways, and pages next and back by cursor', async () => {
    await page.goto(`${dashboard.url}?flow=order&limit=5`);
    const byCreated = Array.from(
      { length: orders },
      (_, i) => `order-${String(i).padStart(2, '0')}`,
    );
    await page.selectOption('#sort', 'created:asc');
    await tableIs(page, byCreated.slice(0, 5));
    expect(await page.locator('#prev-page').isDisabled()).toBe(true);
    await page.locator('#next-page').click();
    await tableIs(page, byCreated.slice(5, 10));
    expect(new URL(page.url()).searchParams.get('after')).not.toBeNull();
    await page.locator('#next-page').click();
    await tableIs(page, byCreated.slice(10));
    expect(await page.locator('#next-page').isDisabled()).toBe(true);
    await page.locator('#prev-page').click();
    await tableIs(page, byCreated.slice(5, 10));
    await page.locator('#prev-page').click();
    await tableIs(page, byCreated.slice(0, 5));
    expect(await page.locator('#prev-page').isDisabled()).toBe(true);
    await page.selectOption('#sort', 'created:desc');
    await tableIs(page, [...byCreated].reverse().slice(0, 5));
    // Last change: the orders completed in the order they started.
    await page.selectOption('#sort', 'updated:asc');
    await tableIs(page, byCreated.slice(0, 5));
    await page.selectOption('#sort', 'updated:desc');
    await tableIs(page, [...byCreated].reverse().slice(0, 5));
  });

  it('a run arriving while the page is filtered shows up live, and leaves when it no longer matches', async () => {
    await page.goto(`${dashboard.url}?flow=waiter&status=suspended`);
    await tableIs(page, ['wait-1']);
    await running.flows.start(waiting, null, { executionId: 'wait-live' });
    await tableIs(page, ['wait-live', 'wait-1']);
    await page.waitForSelector('#status-counts button[data-status="suspended"][data-count="2"]', {
      timeout: waitMs,
    });
    await operator.signal('wait-live', 'go', { go: true });
    await tableIs(page, ['wait-1']);
    await page.waitForSelector('#status-counts button[data-status="completed"][data-count="1"]', {
      timeout: waitMs,
    });
  });

  it('a change off the page still reaches the counts (they are re-read every few polls)', async () => {
    // Oldest first, one run a page: a new run never shows on this page, so the page never changes.
    await page.goto(`${dashboard.url}?sort=created&order=asc&limit=1`);
    const total = (await view.runCounts()).total;
    await page.waitForSelector(`#status-counts button[data-status="all"][data-count="${total}"]`, {
      timeout: waitMs,
    });
    const shown = await tableIds(page);
    await running.flows.start(waiting, null, { executionId: 'wait-off-page' });
    await page.waitForSelector(
      `#status-counts button[data-status="all"][data-count="${total + 1}"]`,
      { timeout: waitMs },
    );
    expect(await tableIds(page)).toEqual(shown);
  });

  it('a search the server refuses says why on the page', async () => {
    await page.goto(`${dashboard.url}?sort=name`);
    await page.waitForSelector('#flash:has-text("sort must be updated or created")', {
      timeout: waitMs,
    });
  });

  it('the page ran without a script error or a CSP violation', () => {
    // The refused search above is a 400 the page meets on purpose (the stream, then the read of
    // why): Chromium logs each. Nothing else.
    const refused =
      'Failed to load resource: the server responded with a status of 400 (Bad Request)';
    expect(pageErrors.filter((e) => e !== refused)).toEqual([]);
  });
});

describe('the runs read API', () => {
  let dashboard: Dashboard;
  beforeAll(async () => {
    dashboard = await startDashboard({ db, port: 0, readOnly: true });
  });
  afterAll(() => dashboard?.close());

  const get = async <T>(path: string): Promise<T> => {
    const reply = await http(`${dashboard.url}${path}`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return reply.body as T;
  };

  it('pages with cursors, filters and sorts, and counts per status', async () => {
    const first = await get<RunSearchPage>('api/runs?flow=order&sort=created&order=asc&limit=5');
    expect(first.runs.map((r) => r.id)).toEqual([
      'order-00',
      'order-01',
      'order-02',
      'order-03',
      'order-04',
    ]);
    expect(first.prevCursor).toBeNull();
    const second = await get<RunSearchPage>(
      `api/runs?flow=order&sort=created&order=asc&limit=5&after=${first.nextCursor}`,
    );
    expect(second.runs[0]?.id).toBe('order-05');
    const back = await get<RunSearchPage>(
      `api/runs?flow=order&sort=created&order=asc&limit=5&before=${second.prevCursor}`,
    );
    expect(back.runs.map((r) => r.id)).toEqual(first.runs.map((r) => r.id));
    const counts = await get<RunCounts>('api/counts?flow=order');
    expect(counts).toMatchObject({ completed: orders, total: orders, failed: 0 });
    const ids = await get<RunSearchPage>('api/runs?id=agent-');
    expect(ids.runs.map((r) => r.id).sort()).toEqual(['agent-refused', 'agent-spent']);
  });

  it('a bad parameter is a 400 INVALID_ARGUMENT naming it', async () => {
    const cases: Array<[string, string]> = [
      ['api/runs?status=sleeping', 'status'],
      ['api/runs?sort=name', 'sort'],
      ['api/runs?order=sideways', 'order'],
      ['api/runs?limit=0', 'limit'],
      ['api/runs?limit=ten', 'limit'],
      ['api/runs?waiting=sleep', 'waiting'],
      ['api/runs?updatedFrom=yesterday', 'updatedFrom'],
      ['api/runs?updatedFrom=10&updatedBefore=5', 'updatedBefore'],
      ['api/runs?after=garbage', 'after'],
      ['api/runs?statsu=failed', 'statsu'],
      [`api/runs?id=${'x'.repeat(600)}`, 'id'],
      ['api/counts?flow=a&bogus=1', 'bogus'],
      ['api/stream?sort=name', 'sort'],
    ];
    const range = await http(`${dashboard.url}api/runs?updatedFrom=10&updatedBefore=5`);
    expect((range.body as { error: { message: string } }).error.message).toBe(
      'updatedBefore must come after updatedFrom',
    );
    for (const [path, param] of cases) {
      const reply = await http(`${dashboard.url}${path}`);
      expect([path, reply.status]).toEqual([path, 400]);
      expect(reply.body).toMatchObject({
        error: { code: 'INVALID_ARGUMENT', fields: { path: param } },
      });
    }
  });
});
