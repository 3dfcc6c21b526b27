// The dashboard's Re-run and Record outcome buttons on the approval a crash leaves behind, in
// Debian's Chromium: a real agent process is SIGKILLed inside a remote_mutation tool (after its
// side effect) and restarted, so its run waits on an interrupted_side_effect approval; the page
// decides it; a third life of the process continues the run, and the page shows it completed.
// The tool's side channel (a file) counts its real calls. Mutations without the token, and on a
// read-only dashboard, are refused and change nothing. SQLite file and Postgres.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Approval } from '@loom/agent-loop';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Dashboard, openView, startDashboard, type View } from '../src/index.js';
import { http, openBrowser, openPage } from './dashboard-support.js';
import { dbTargets } from './db-targets.js';
import { calls, interruptedApproval, life } from './interrupted-life.js';

const waitMs = 30_000;
const artifacts = fileURLToPath(new URL('../test-artifacts/', import.meta.url));
const { dir, targets, cleanup } = dbTargets('view-dash-resolution');
afterAll(cleanup);

describe.each(targets)(
  'resolving an interrupted side effect from the dashboard on $name',
  (target) => {
    const env = { LOOM_DB: target.db };
    const rerunId = `${target.name}-page-rerun`;
    const recordId = `${target.name}-page-record`;
    const channel = (runId: string) => join(dir, `${runId}.calls`);
    const approvals = new Map<string, Approval>();
    let view: View;
    let dashboard: Dashboard;
    let browser: BrowserContext;
    let page: Page;
    const pageErrors: string[] = [];

    beforeAll(async () => {
      mkdirSync(artifacts, { recursive: true });
      await (await target.open()).close();
      for (const runId of [rerunId, recordId]) {
        approvals.set(runId, await interruptedApproval(target.env, env, runId, channel(runId)));
      }
      view = await openView({ db: target.db });
      dashboard = await startDashboard({ db: target.db, port: 0, pollMs: 100 });
      browser = await openBrowser(join(dir, `${target.name}-profile`));
      page = await openPage(browser, dashboard.urlWithToken, pageErrors);
    });

    afterAll(async () => {
      await browser?.close();
      await dashboard?.close();
      await view?.close();
    });

    const pendingIds = async () => (await view.pendingApprovals()).map((a) => a.id);

    async function open(runId: string): Promise<void> {
      await page.getByRole('button', { name: runId, exact: true }).click({ timeout: waitMs });
      await page.waitForSelector(`#detail-head h2:text-is("${runId}")`, { timeout: waitMs });
    }

    /** The third life of the worker continues the run; returns its result. */
    async function continueRun(runId: string): Promise<unknown> {
      const third = await life({ ...target.env, RUN_ID: runId, SIDE_CHANNEL: channel(runId) });
      expect(third.line).toMatch(/^result /);
      return JSON.parse(third.line.slice('result '.length));
    }

    it('a resolution without the token, with a wrong one, or on a read-only dashboard is refused', async () => {
      const id = approvals.get(rerunId)?.id ?? '';
      const url = `${dashboard.url}api/approvals/${encodeURIComponent(id)}/approve`;
      const body = { resolution: { kind: 'rerun' } };
      const none = await http(url, { method: 'POST', body });
      expect(none.status).toBe(401);
      expect(none.body).toMatchObject({ error: { code: 'TOKEN_REQUIRED' } });
      const wrong = await http(url, {
        method: 'POST',
        body,
        headers: { authorization: 'Bearer not-the-token-of-this-dashboard' },
      });
      expect(wrong.status).toBe(403);
      expect(wrong.body).toMatchObject({ error: { code: 'TOKEN_INVALID' } });
      const readOnly = await startDashboard({ db: target.db, port: 0, readOnly: true });
      try {
        const refused = await http(
          `${readOnly.url}api/approvals/${encodeURIComponent(id)}/approve`,
          { method: 'POST', body, headers: { authorization: `Bearer ${readOnly.token}` } },
        );
        expect(refused.status).toBe(403);
        expect(refused.body).toMatchObject({ error: { code: 'READ_ONLY' } });
      } finally {
        await readOnly.close();
      }
      expect(await pendingIds()).toEqual(expect.arrayContaining([id]));
    });

    it('an approve without a resolution is refused: 400 RESOLUTION_REQUIRED, nothing decided', async () => {
      const id = approvals.get(rerunId)?.id ?? '';
      const url = `${dashboard.url}api/approvals/${encodeURIComponent(id)}/approve`;
      const headers = { authorization: `Bearer ${dashboard.token}` };
      for (const body of [{}, { resolution: null }, { note: 'looks fine' }]) {
        const plain = await http(url, { method: 'POST', body, headers });
        expect(plain.status).toBe(400);
        expect(plain.body).toMatchObject({
          error: { code: 'RESOLUTION_REQUIRED', fields: { approvalId: id } },
        });
      }
      expect(await pendingIds()).toEqual(expect.arrayContaining([id]));
      expect(calls(channel(rerunId))).toHaveLength(1);
    });

    it('Re-run: the tool is called once more with the same key, and the run completes', async () => {
      const approval = approvals.get(rerunId) as Approval;
      await open(rerunId);
      const rerun = page.locator('button[data-action="rerun"]');
      await rerun.waitFor({ timeout: waitMs });
      // An interrupted side effect offers the two resolutions, not a bare Approve.
      expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
      expect(await page.locator('#detail').textContent()).toContain('outcome unknown');
      await page.screenshot({ path: join(artifacts, `resolution-${target.name}.png`) });
      await rerun.click();
      await page.waitForSelector(`#flash:has-text("re-running the call of ${approval.id}")`, {
        timeout: waitMs,
      });
      expect(await pendingIds()).not.toContain(approval.id);
      const [decided] = (await view.show(rerunId)).approvals;
      expect(decided?.decision?.resolution).toEqual({ kind: 'rerun' });

      expect(await continueRun(rerunId)).toMatchObject({ reason: 'goal_completed' });
      const lines = calls(channel(rerunId));
      expect(lines).toHaveLength(2);
      expect(lines[1]).toBe(lines[0]);
      await page.waitForSelector('#run-status:text-is("completed")', { timeout: waitMs });
    });

    it('Record outcome: refuses text that is not JSON, then records it; the tool is not called again', async () => {
      const approval = approvals.get(recordId) as Approval;
      await open(recordId);
      const output = page.locator('input.record-output');
      await output.waitFor({ timeout: waitMs });
      await output.fill('wired');
      await page.locator('button[data-action="record"]').click();
      await page.waitForSelector('#flash.error:has-text("must be JSON")', { timeout: waitMs });
      expect(await pendingIds()).toContain(approval.id);

      await output.fill('{"wired":"ana"}');
      await page.locator('button[data-action="record"]').click();
      await page.waitForSelector(`#flash:has-text("recorded the outcome of ${approval.id}")`, {
        timeout: waitMs,
      });
      const [decided] = (await view.show(recordId)).approvals;
      expect(decided?.decision?.resolution).toEqual({ kind: 'record', output: { wired: 'ana' } });

      expect(await continueRun(recordId)).toMatchObject({
        reason: 'goal_completed',
        output: 'wired',
      });
      expect(calls(channel(recordId))).toHaveLength(1);
      await page.waitForSelector('#run-status:text-is("completed")', { timeout: waitMs });
      expect(pageErrors).toEqual([]);
    });
  },
);
