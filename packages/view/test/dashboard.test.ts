// The dashboard end to end: a real SQLite file populated by real flows and agent runs, a runtime
// in this process that keeps serving them, the dashboard on 127.0.0.1, and Debian's Chromium
// (headless, driven by playwright-core) clicking its buttons. Plus the guards over plain HTTP,
// read-only mode, the bind rule, and `loom serve` as a child process.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Backend } from '@loom/event-runtime';
import { openSqlite } from '@loom/event-runtime/sqlite';
import { killTestProcesses, spawnTestProcess } from '@loom/event-runtime/testing';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Dashboard, openView, startDashboard, type View } from '../src/index.js';
import { streamsMax } from '../src/internal/dashboard/dashboard-app.js';
import { http, openBrowser, openPage, servingRuntime, until } from './dashboard-support.js';
import { asker, mailer, mailToken, populate, type Running, sentMails, waiting } from './fixture.js';

const artifacts = fileURLToPath(new URL('../test-artifacts/', import.meta.url));
const docsImage = fileURLToPath(new URL('../../../docs/img/dashboard.png', import.meta.url));
const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
/** A wait in the browser: generous, the machine is shared. */
const waitMs = 30_000;

const dir = mkdtempSync(join(tmpdir(), 'loom-view-dashboard-'));
const sqlitePath = join(dir, 'loom.db');
const db = `sqlite:${sqlitePath}`;
let backend: Backend;
let running: Running;
let view: View;

beforeAll(async () => {
  mkdirSync(artifacts, { recursive: true });
  backend = await openSqlite({ path: sqlitePath, migrate: true });
  running = servingRuntime(backend);
  await populate(running, backend);
  // Two more waiting runs, so each test below has its own: one guarded, one agent for read-only.
  await running.flows.start(waiting, null, { executionId: 'wait-guard' });
  await running.flows.start(waiting, null, { executionId: 'wait-resume' });
  await running.agents.start(mailer, 'mail ana', { runId: 'agent-2' });
  // And an agent run whose model asks a person a question.
  await running.agents.start(asker, 'paint the door', { runId: 'ask-1' });
  view = await openView({ db });
  await until(async () => {
    const approvals = await view.pendingApprovals();
    return approvals.some((a) => a.runId === 'agent-2') ? true : undefined;
  }, 'agent-2 waiting for approval');
  await until(async () => {
    const questions = await view.pendingQuestions();
    return questions.some((q) => q.runId === 'ask-1') ? true : undefined;
  }, 'ask-1 waiting for an answer');
});

afterAll(async () => {
  await killTestProcesses();
  await view?.close();
  await running?.flows.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

async function statusOf(id: string): Promise<string> {
  return (await view.show(id)).run.status;
}

/** Waits until the runs table shows `id` with `status` (the page updates itself over SSE). */
async function rowWithStatus(page: Page, id: string, status: string): Promise<void> {
  await page.waitForSelector(`tr[data-run="${id}"][data-status="${status}"]`, { timeout: waitMs });
}

describe('the dashboard in Chromium', () => {
  let dashboard: Dashboard;
  let browser: BrowserContext;
  let page: Page;
  /** Script errors and console errors (a CSP violation is one): there must be none. */
  const pageErrors: string[] = [];

  beforeAll(async () => {
    dashboard = await startDashboard({ db, port: 0, pollMs: 100 });
    browser = await openBrowser(join(dir, 'chromium-profile'));
    page = await openPage(browser, dashboard.urlWithToken, pageErrors);
  });
  afterAll(async () => {
    await browser?.close();
    await dashboard?.close();
  });

  it('lists the runs with their status and filters them by status', async () => {
    await rowWithStatus(page, 'agent-1', 'suspended');
    await rowWithStatus(page, 'order-7', 'completed');
    await rowWithStatus(page, 'charge-1', 'failed');
    expect(await page.locator('tr[data-run="agent-1"]').textContent()).toContain('1 pending');
    // The token left the address bar as soon as the page read it.
    expect(page.url()).not.toContain(dashboard.token);
    await page.selectOption('#status-filter', 'failed');
    await page.waitForSelector('tr[data-run="order-7"]', { state: 'detached', timeout: waitMs });
    expect(await page.locator('#runs-body tr').evaluateAll((rows) => rows.length)).toBe(1);
    await rowWithStatus(page, 'charge-1', 'failed');
    await page.selectOption('#status-filter', '');
    await rowWithStatus(page, 'order-7', 'completed');
  });

  it('shows a run: its timeline as bars over time, and each event as JSON on a click', async () => {
    await page.getByRole('button', { name: 'order-7', exact: true }).click();
    await page.waitForSelector('#detail-head h2:text-is("order-7")', { timeout: waitMs });
    const bars = page.locator('#timeline svg rect.bar');
    await bars.first().waitFor({ timeout: waitMs });
    expect(await bars.count()).toBe(2);
    expect(await page.locator('#timeline svg text').allTextContents()).toEqual(
      expect.arrayContaining(['step: price', 'step: receipt']),
    );
    // A bar is as wide as its step is long, and starts where it started: the second starts after
    // the first one's start.
    const xs = await bars.evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('x'))));
    expect(xs[1]).toBeGreaterThanOrEqual(xs[0] ?? Number.NaN);
    // Each event says what it is about without a click: the run's flow, then each step's name.
    await page.locator('#events-body tr[data-sequence="5"]').waitFor({ timeout: waitMs });
    expect(await page.locator('#events-body tr td:nth-child(3)').allTextContents()).toEqual([
      'order',
      'price',
      'price',
      'receipt',
      'receipt',
      '',
    ]);
    await page.locator('#events-body tr[data-sequence="5"]').click({ timeout: waitMs });
    const inspected = JSON.parse((await page.locator('#inspector').textContent()) ?? '') as {
      type: string;
      executionId: string;
      sequence: number;
    };
    expect(inspected).toMatchObject({
      type: 'execution.completed',
      executionId: 'order-7',
      sequence: 5,
    });
    await bars.first().click();
    expect(JSON.parse((await page.locator('#inspector').textContent()) ?? '')).toMatchObject({
      kind: 'step',
      name: 'price',
      status: 'completed',
    });
  });

  it("a parent's run links its child, and the child's links back to its parent", async () => {
    const childId = (await view.show('parent-1')).timeline.find((entry) => entry.kind === 'child')
      ?.childId as string;
    expect(childId).toBeDefined();
    await page.getByRole('button', { name: 'parent-1', exact: true }).click();
    await page.waitForSelector('#detail-head h2:text-is("parent-1")', { timeout: waitMs });
    const children = page.locator('#run-children button');
    await children.first().waitFor({ timeout: waitMs });
    expect(await children.allTextContents()).toEqual([childId]);
    await children.first().click();
    await page.waitForSelector(`#detail-head h2:text-is("${childId}")`, { timeout: waitMs });
    const parent = page.locator('#run-parent button');
    expect(await parent.allTextContents()).toEqual(['parent-1']);
    await parent.click();
    await page.waitForSelector('#detail-head h2:text-is("parent-1")', { timeout: waitMs });
  });

  it('approving a waiting agent run lets it complete, live, and its tool runs once', async () => {
    const mailsBefore = sentMails.length;
    await page.getByRole('button', { name: 'agent-1', exact: true }).click();
    await page.waitForSelector('#detail-head h2:text-is("agent-1")', { timeout: waitMs });
    const approve = page.getByRole('button', { name: 'Approve' });
    await approve.waitFor({ timeout: waitMs });
    // The approval sits in the conversation, at the call that waits for it, with the call's input.
    const inline = page.locator('#conversation .turn[data-turn="1"] .approval[data-approval]');
    await inline.getByRole('button', { name: 'Approve' }).waitFor({ timeout: waitMs });
    expect(await inline.textContent()).toContain('send_mail {"to":"ana"}');
    expect(await page.locator('#approvals .approval').count()).toBe(0);
    await page.locator('#by').fill('ana');
    await page.locator('#by').dispatchEvent('change');
    await page.screenshot({ path: join(artifacts, 'dashboard-pending.png'), fullPage: true });
    await approve.click();
    await page.waitForSelector('#flash:has-text("approved agent-1~")', { timeout: waitMs });
    // The runtime in this process picks the run up; the page follows without a reload.
    await rowWithStatus(page, 'agent-1', 'completed');
    await page.waitForSelector('#run-status:text-is("completed")', { timeout: waitMs });
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    // Decided, it stays at its call: who decided and when.
    await page.waitForSelector(
      '#conversation .turn[data-turn="1"] .approval.decided:has-text("approved by ana at ")',
      { timeout: waitMs },
    );
    expect(sentMails.length - mailsBefore).toBe(1);
    const detail = await view.show('agent-1');
    expect(detail.run.terminalReason).toBe('goal_completed');
    expect(detail.approvals[0]?.decision).toMatchObject({ decision: 'approved', by: 'ana' });
    // The tool call's bar: its result is what the model saw next.
    await page.locator('#timeline svg rect.bar[data-label^="tool_call"]').click();
    expect(JSON.parse((await page.locator('#inspector').textContent()) ?? '')).toMatchObject({
      agentRole: 'tool_call',
      result: { output: mailToken },
    });
    // The conversation, folded from the log: the input, then each turn's model record (model and
    // tokens as logged) with the call and what it returned.
    const events = await view.events('agent-1');
    const payloads = events.map((event) => ({ type: event.type, ...(event.payload as object) }));
    const decided = payloads.filter(
      (payload): payload is typeof payload & { result: unknown } =>
        payload.type === 'step.completed' &&
        /^decide:/.test(String((payload as { name?: unknown }).name)),
    );
    expect(decided).toHaveLength(2);
    const turns = page.locator('#conversation .turn[data-turn]');
    await page.waitForSelector('#conversation .turn[data-turn="2"]', { timeout: waitMs });
    expect(await turns.count()).toBe(2);
    for (const [index, payload] of decided.entries()) {
      const result = payload.result as {
        model: string;
        usage: { inputTokens: number; outputTokens: number };
        latencyMs: number;
      };
      expect(await turns.nth(index).locator('.meta').textContent()).toBe(
        `turn ${index + 1} · ${result.model} · ${result.usage.inputTokens} in / ${result.usage.outputTokens} out tokens · ${result.latencyMs} ms`,
      );
    }
    expect(await page.locator('#conversation .turn').first().textContent()).toContain('mail ana');
    expect(await turns.nth(0).locator('.call').textContent()).toBe(
      `send_mail({"to":"ana"}) → "${mailToken}"`,
    );
    expect(await turns.nth(1).locator('.said').textContent()).toBe('mailed ana');
    await page.screenshot({ path: join(artifacts, 'dashboard.png'), fullPage: true });
    // docs/img/dashboard.png is this screenshot, refreshed on purpose (it changes on every run).
    if (process.env.LOOM_UPDATE_DOCS_IMG === '1') {
      copyFileSync(join(artifacts, 'dashboard.png'), docsImage);
    }
  });

  it('answering a question from the page lets the run go on with the answer', async () => {
    await page.getByRole('button', { name: 'ask-1', exact: true }).click();
    await page.waitForSelector('#detail-head h2:text-is("ask-1")', { timeout: waitMs });
    expect(await page.locator('#detail-head').textContent()).toContain('answer ask-1~1.0');
    const send = page.getByRole('button', { name: 'Answer' });
    await send.waitFor({ timeout: waitMs });
    // The question sits in the conversation, at the turn that asked it.
    const asked = page.locator('#conversation .turn[data-turn="1"] .question[data-question]');
    await asked.waitFor({ timeout: waitMs });
    expect(await asked.textContent()).toContain('Which colour, exactly?');
    // An empty answer is refused in the page; nothing is sent.
    await send.click();
    await page.waitForSelector('#flash:has-text("type the answer first")', { timeout: waitMs });
    await page.locator('#by').fill('ana');
    await page.locator('#by').dispatchEvent('change');
    await page.getByLabel('the answer to ask-1~1.0').fill('teal');
    await send.click();
    await page.waitForSelector('#flash:has-text("answered ask-1~1.0")', { timeout: waitMs });
    await rowWithStatus(page, 'ask-1', 'completed');
    await page.waitForSelector(
      '#conversation .turn[data-turn="1"] .question:has-text("answered by ana: teal (at ")',
      { timeout: waitMs },
    );
    expect(await page.getByRole('button', { name: 'Answer' }).count()).toBe(0);
    const detail = await view.show('ask-1');
    expect(detail.run.terminalReason).toBe('goal_completed');
    expect(detail.questions[0]).toMatchObject({
      status: 'answered',
      answer: { by: 'ana', text: 'teal' },
    });
  });

  it('a signal sent from the page is delivered and the waiting flow completes with it', async () => {
    await page.getByRole('button', { name: 'wait-signal', exact: true }).click();
    await page.waitForSelector('#detail-head h2:text-is("wait-signal")', { timeout: waitMs });
    await page.locator('#signal-name').fill('go');
    await page.locator('#signal-payload').fill('{"go":true}');
    await page.getByRole('button', { name: 'Send signal' }).click();
    await page.waitForSelector('#flash:has-text("signal go sent to wait-signal")', {
      timeout: waitMs,
    });
    await rowWithStatus(page, 'wait-signal', 'completed');
    expect((await view.show('wait-signal')).output).toEqual({ go: true });
  });

  it('resume replays a waiting run from its log, with who asked for it', async () => {
    await page.getByRole('button', { name: 'wait-resume', exact: true }).click();
    await page.waitForSelector('#detail-head h2:text-is("wait-resume")', { timeout: waitMs });
    await page.locator('#by').fill('ana');
    await page.locator('#by').dispatchEvent('change');
    await page.locator('#resume-run').click();
    await page.waitForSelector('#flash:has-text("resumed wait-resume (it was suspended)")', {
      timeout: waitMs,
    });
    const resumed = (await view.events('wait-resume')).filter(
      (event) =>
        event.type === 'execution.suspended' &&
        (event.payload as { resumedBy?: unknown }).resumedBy === 'ana',
    );
    expect(resumed).toHaveLength(1);
    // The serving runtime's poll replays it; it waits for its signal again.
    await until(async () => {
      const events = await view.events('wait-resume');
      const last = events.at(-1);
      return last !== undefined && last.sequence > (resumed[0]?.sequence ?? 0) ? true : undefined;
    }, 'the resumed run replayed and waiting again');
    expect(await statusOf('wait-resume')).toBe('suspended');
  });

  it('retry of a failed run appends execution.retried; the serving runtime replays it', async () => {
    await page.getByRole('button', { name: 'charge-1', exact: true }).click();
    await page.waitForSelector('#detail-head h2:text-is("charge-1")', { timeout: waitMs });
    const retry = page.locator('#retry-run');
    await retry.waitFor({ timeout: waitMs });
    const failures = async () =>
      (await view.events('charge-1')).filter((event) => event.type === 'execution.failed').length;
    expect(await failures()).toBe(1);
    await page.locator('#by').fill('ana');
    await page.locator('#by').dispatchEvent('change');
    await page.locator('#retry-reason').fill('card processor back up');
    page.once('dialog', (dialog) => void dialog.accept());
    await retry.click();
    await page.waitForSelector('#flash:has-text("retried charge-1 (by ana)")', { timeout: waitMs });
    // The fixture's card is still declined: the replayed step fails again, after the retry.
    await until(
      async () => ((await failures()) === 2 ? true : undefined),
      'charge-1 to fail again',
    );
    const logged = await view.events('charge-1');
    const types = logged.map((event) => event.type);
    expect(types.indexOf('execution.retried')).toBeGreaterThan(types.indexOf('execution.failed'));
    // Who asked and why are in the log, and the run page says them.
    const retried = logged.find((event) => event.type === 'execution.retried');
    expect(retried?.payload).toMatchObject({ by: 'ana', reason: 'card processor back up' });
    await page.waitForSelector(
      `#detail-head .retry[data-sequence="${retried?.sequence}"]:has-text("by ana: card processor back up")`,
      { timeout: waitMs },
    );
    await page.locator('#detail-head').screenshot({ path: join(artifacts, 'dashboard-retry.png') });
    if (process.env.LOOM_UPDATE_DOCS_IMG === '1') {
      copyFileSync(
        join(artifacts, 'dashboard-retry.png'),
        join(docsImage, '..', 'dashboard-retry.png'),
      );
    }
    await rowWithStatus(page, 'charge-1', 'failed');
    // The button is only for a failed run.
    await page.getByRole('button', { name: 'order-7', exact: true }).click();
    await page.waitForSelector('#detail-head h2:text-is("order-7")', { timeout: waitMs });
    expect(await retry.isHidden()).toBe(true);
  });

  it('fork at a selected event makes a new run whose log is the original up to it', async () => {
    await page.getByRole('button', { name: 'order-7', exact: true }).click();
    await page.waitForSelector('#detail-head h2:text-is("order-7")', { timeout: waitMs });
    const fork = page.getByRole('button', { name: 'Fork at the selected event' });
    expect(await fork.isDisabled()).toBe(true);
    await page.locator('#events-body tr[data-sequence="2"]').click({ timeout: waitMs });
    expect(await fork.isDisabled()).toBe(false);
    page.once('dialog', (dialog) => void dialog.accept());
    await fork.click();
    await page.waitForSelector('#flash:has-text("forked order-7 at 2 as fork-2-of-order-7")', {
      timeout: waitMs,
    });
    const original = await view.events('order-7');
    const forked = await view.events('fork-2-of-order-7');
    expect(forked.slice(1, 3).map((event) => [event.type, event.payload])).toEqual(
      original.slice(1, 3).map((event) => [event.type, event.payload]),
    );
    expect(forked[0]?.payload).toMatchObject({ forkedFrom: { executionId: 'order-7' } });
  });

  it('cancel asks first, then ends the run with who cancelled it', async () => {
    await page.getByRole('button', { name: 'wait-cancel', exact: true }).click();
    await page.waitForSelector('#detail-head h2:text-is("wait-cancel")', { timeout: waitMs });
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await rowWithStatus(page, 'wait-cancel', 'cancelled');
    expect((await view.show('wait-cancel')).run.terminalReason).toBe(
      'cancelled by ana: from the dashboard',
    );
    // An ended run offers no cancel or signal.
    await page.waitForSelector('#actions', { state: 'hidden', timeout: waitMs });
  });

  it('the page ran without a script error or a CSP violation', () => {
    expect(pageErrors).toEqual([]);
  });
});

describe('the dashboard refuses what it must', () => {
  let dashboard: Dashboard;
  beforeAll(async () => {
    dashboard = await startDashboard({ db, port: 0 });
  });
  afterAll(() => dashboard?.close());
  const cancelUrl = () => `${dashboard.url}api/runs/wait-guard/cancel`;

  it('a mutation without the token is 401, with a wrong one 403, and the run is untouched', async () => {
    const none = await http(cancelUrl(), { method: 'POST', body: { by: 'mallory' } });
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ error: { code: 'TOKEN_REQUIRED' } });
    const wrong = await http(cancelUrl(), {
      method: 'POST',
      body: {},
      headers: { authorization: 'Bearer not-the-token-at-all' },
    });
    expect(wrong.status).toBe(403);
    expect(wrong.body).toMatchObject({ error: { code: 'TOKEN_INVALID' } });
    // A cookie is no credential here: only the header counts.
    const cookie = await http(cancelUrl(), {
      method: 'POST',
      body: {},
      headers: { cookie: `token=${dashboard.token}` },
    });
    expect(cookie.status).toBe(401);
    expect(await statusOf('wait-guard')).toBe('suspended');
  });

  it("a mutation from another site's page is 403 even with the token, and a foreign Host is refused", async () => {
    const auth = { authorization: `Bearer ${dashboard.token}` };
    const crossSite = await http(cancelUrl(), {
      method: 'POST',
      body: {},
      headers: { ...auth, origin: 'http://evil.example' },
    });
    expect(crossSite.status).toBe(403);
    expect(crossSite.body).toMatchObject({ error: { code: 'ORIGIN_REFUSED' } });
    const fetchSite = await http(cancelUrl(), {
      method: 'POST',
      body: {},
      headers: { ...auth, 'sec-fetch-site': 'cross-site' },
    });
    expect(fetchSite.status).toBe(403);
    // DNS rebinding: a name that resolves to 127.0.0.1 but is not ours.
    const rebound = await http(`${dashboard.url}api/runs`, {
      headers: { host: `evil.example:${dashboard.port}` },
    });
    expect(rebound.status).toBe(403);
    expect(rebound.body).toMatchObject({ error: { code: 'ORIGIN_REFUSED' } });
    expect(await statusOf('wait-guard')).toBe('suspended');
    // The same request from the page's own origin, with the token, goes through.
    const own = await http(cancelUrl(), {
      method: 'POST',
      body: { by: 'ops', reason: 'guard test' },
      headers: { ...auth, origin: `http://127.0.0.1:${dashboard.port}` },
    });
    expect(own.status).toBe(200);
    expect(own.body).toEqual({ executionId: 'wait-guard', cancelled: true });
    expect(await statusOf('wait-guard')).toBe('cancelled');
  });

  it('bad input is a typed 4xx: no such run 404, a body that is not JSON 400', async () => {
    expect((await http(`${dashboard.url}api/runs/nope`)).body).toMatchObject({
      error: { code: 'RUN_NOT_FOUND' },
    });
    expect((await http(`${dashboard.url}api/runs/nope`)).status).toBe(404);
    const notJson = await http(`${dashboard.url}api/runs/wait-guard/signal`, {
      method: 'POST',
      headers: { authorization: `Bearer ${dashboard.token}`, 'content-type': 'text/plain' },
    });
    expect(notJson.status).toBe(400);
    expect(notJson.body).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
    const badFrom = await http(`${dashboard.url}api/runs/order-7/events?from=abc`);
    expect(badFrom.status).toBe(400);
    expect(badFrom.body).toMatchObject({
      error: { code: 'INVALID_ARGUMENT', fields: { path: 'from' } },
    });
    // A fork needs the sequence it keeps up to; one past the log is refused by the fork itself.
    const post = (path: string, body: unknown) =>
      http(`${dashboard.url}api/runs/order-7/${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${dashboard.token}` },
        body,
      });
    const noSequence = await post('fork', { by: 'ana' });
    expect(noSequence.status).toBe(400);
    expect(noSequence.body).toMatchObject({
      error: { code: 'INVALID_ARGUMENT', fields: { path: 'atSequence' } },
    });
    const pastTheLog = await post('fork', { by: 'ana', atSequence: 99 });
    expect(pastTheLog.status).toBe(400);
    expect(pastTheLog.body).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
    // An ended run is not resumed (retry or fork it instead).
    const ended = await post('resume', { by: 'ana' });
    expect(ended.status).toBe(409);
    expect(ended.body).toMatchObject({ error: { code: 'EXECUTION_SETTLED' } });
    expect(
      await view.events('fork-99-of-order-7').catch((error: { code?: string }) => error.code),
    ).toBe('RUN_NOT_FOUND');
  });

  it("approve passes an interrupted side effect's resolution to agent-loop, which checks it", async () => {
    const [approval] = (await view.pendingApprovals()).filter((a) => a.runId === 'agent-2');
    const reply = await http(
      `${dashboard.url}api/approvals/${encodeURIComponent(approval?.id ?? '')}/approve`,
      {
        method: 'POST',
        body: { resolution: { kind: 'rerun' } },
        headers: { authorization: `Bearer ${dashboard.token}` },
      },
    );
    // agent-2's approval is a tool_call approval: it takes no resolution.
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ error: { code: 'INVALID_RESOLUTION' } });
    expect((await view.pendingApprovals()).map((a) => a.id)).toContain(approval?.id);
  });

  it('the page is served with a CSP that forbids inline script and framing', async () => {
    const reply = await http(dashboard.url);
    expect(reply.status).toBe(200);
    expect(String(reply.headers['content-security-policy'])).toContain("script-src 'self'");
    expect(String(reply.headers['content-security-policy'])).toContain("frame-ancestors 'none'");
    expect(String(reply.body)).not.toContain(dashboard.token);
  });
});

describe('event streams', () => {
  it(`at most ${streamsMax} are open at once; the next is 503 LIMIT_EXCEEDED`, async () => {
    const dashboard = await startDashboard({ db, port: 0, readOnly: true });
    const controller = new AbortController();
    try {
      const open = await Promise.all(
        Array.from({ length: streamsMax }, () =>
          fetch(`${dashboard.url}api/stream`, { signal: controller.signal }),
        ),
      );
      expect(open.map((r) => r.status)).toEqual(open.map(() => 200));
      const refused = await http(`${dashboard.url}api/stream`);
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({ error: { code: 'LIMIT_EXCEEDED' } });
    } finally {
      controller.abort();
      await dashboard.close();
    }
  });
});

describe('a read-only dashboard', () => {
  let dashboard: Dashboard;
  let browser: BrowserContext;
  beforeAll(async () => {
    dashboard = await startDashboard({ db, port: 0, readOnly: true, pollMs: 100 });
    browser = await openBrowser(join(dir, 'chromium-read-only'));
  });
  afterAll(async () => {
    await browser?.close();
    await dashboard?.close();
  });

  it('shows a waiting approval without any button that would change it', async () => {
    const page = await browser.newPage();
    await page.goto(dashboard.urlWithToken);
    await rowWithStatus(page, 'agent-2', 'suspended');
    await page.getByRole('button', { name: 'agent-2', exact: true }).click();
    await page.waitForSelector('#detail .approval', { timeout: waitMs });
    expect(await page.locator('#mode').textContent()).toBe('read-only');
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Reject' }).count()).toBe(0);
    expect(
      await page.locator('#cancel-run, #signal-form, #token, #bulk-form, input.pick-run').count(),
    ).toBe(0);
    await page.screenshot({ path: join(artifacts, 'dashboard-read-only.png'), fullPage: true });
  });

  it('refuses every mutation with 403, even with the right token', async () => {
    const [approval] = (await view.pendingApprovals()).filter((a) => a.runId === 'agent-2');
    expect(approval).toBeDefined();
    const reply = await http(
      `${dashboard.url}api/approvals/${encodeURIComponent(approval?.id ?? '')}/approve`,
      { method: 'POST', body: {}, headers: { authorization: `Bearer ${dashboard.token}` } },
    );
    expect(reply.status).toBe(403);
    expect(reply.body).toMatchObject({ error: { code: 'READ_ONLY' } });
    expect((await view.pendingApprovals()).map((a) => a.id)).toContain(approval?.id);
  });
});

describe('where the dashboard listens', () => {
  it('refuses a non-loopback host unless remote binds are allowed', async () => {
    await expect(startDashboard({ db, port: 0, host: '0.0.0.0' })).rejects.toMatchObject({
      code: 'REMOTE_BIND_REFUSED',
      fields: { host: '0.0.0.0' },
    });
    const remote = await startDashboard({
      db,
      port: 0,
      host: '0.0.0.0',
      allowRemote: true,
      readOnly: true,
    });
    try {
      expect(remote.host).toBe('0.0.0.0');
      expect((await http(`http://127.0.0.1:${remote.port}/api/config`)).body).toEqual({
        readOnly: true,
      });
    } finally {
      await remote.close();
    }
  });

  it('close ends the open event streams and returns', async () => {
    const dashboard = await startDashboard({ db, port: 0, readOnly: true });
    const response = await fetch(`${dashboard.url}api/stream`);
    const reader = response.body?.getReader();
    const first = await reader?.read();
    expect(new TextDecoder().decode(first?.value)).toContain('event: runs');
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('close did not return in 20 s')), 20_000);
    });
    try {
      await Promise.race([dashboard.close(), deadline]);
      // The stream ends (done, or the socket is cut), it does not hang.
      const rest = await Promise.race([
        (async () => {
          for (;;) {
            const chunk = await reader?.read();
            if (chunk === undefined || chunk.done) return 'ended';
          }
        })().catch(() => 'ended'),
        deadline,
      ]);
      expect(rest).toBe('ended');
    } finally {
      clearTimeout(timer);
    }
  });

  it('loom serve refuses --host 0.0.0.0 without --allow-remote (exit 2)', async () => {
    const out = await serve(['--host', '0.0.0.0', '--port', '0']);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('REMOTE_BIND_REFUSED');
    expect(out.stderr).toContain('--allow-remote');
  });

  it('loom serve --port 0 prints the URL and token, serves, and stops on SIGTERM', async () => {
    const out = await serve(
      ['--port', '0', '--json'],
      { LOOM_TOKEN: 'a-token-from-the-environment' },
      async (printed) => {
        expect(printed.token).toBe('a-token-from-the-environment');
        expect(printed.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
        const runs = await http(`${printed.url}api/runs?status=completed`);
        expect(runs.status).toBe(200);
        expect((runs.body as { runs: { id: string }[] }).runs.map((r) => r.id)).toContain(
          'order-7',
        );
      },
    );
    expect(out.code).toBe(0);
  });
});

/**
 * Runs `loom serve --db <db> …` as a child. With `whileUp`, waits for the printed JSON line, runs
 * `whileUp` against it, then sends SIGTERM; without, waits for the child to exit by itself.
 */
async function serve(
  args: string[],
  env: Record<string, string> = {},
  whileUp?: (printed: { url: string; token: string }) => Promise<void>,
): Promise<{ code: number | null; stderr: string }> {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run pnpm build first`);
  const server = spawnTestProcess(bin, {
    args: ['serve', '--db', db, ...args],
    nodeArgs: [],
    inheritEnv: false,
    env: { PATH: process.env.PATH ?? '', ...env },
    name: 'loom serve',
  });
  const printed =
    whileUp === undefined
      ? undefined
      : await server
          .waitFor(
            () => {
              const stdout = server.stdout();
              if (!stdout.split('\n').some((l) => l.trim().startsWith('{'))) return undefined;
              try {
                return JSON.parse(stdout) as { url: string; token: string };
              } catch {
                return undefined; // the document is not complete yet
              }
            },
            'the printed JSON document',
            60_000,
          )
          .catch(() => undefined); // it ended without one: its code and stderr say why
  const checked =
    printed === undefined || whileUp === undefined
      ? undefined
      : whileUp(printed).finally(() => server.child.kill('SIGTERM'));
  checked?.catch(() => undefined);
  const { code } = await server.exit;
  await checked;
  return { code, stderr: server.stderr() };
}
