// The dashboard's keyboard and contrast in Debian's Chromium: the runs list moved through with
// j/k and the arrows, Enter opens a run, / goes to the search, Escape closes the run, every
// control reachable by Tab; and the WCAG contrast of every text on the page, in the runs list,
// with an agent run open (its conversation with an approval and a question inline), and read-only
// in a narrow window (CSS labels included); the runs list filtered by what a run waits for (an
// approval, an answer, a signal). Screenshots for docs/operations.md.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Backend } from '@loom/event-runtime';
import { openSqlite } from '@loom/event-runtime/sqlite';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Dashboard, openView, startDashboard, type View } from '../src/index.js';
import { openBrowser, openPage, servingRuntime, until } from './dashboard-support.js';
import { asker, failing, mailer, order, type Running, waiting } from './fixture.js';

const waitMs = 30_000;
const artifacts = fileURLToPath(new URL('../test-artifacts/', import.meta.url));
const docsImg = fileURLToPath(new URL('../../../docs/img/', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'loom-view-console-'));
const sqlitePath = join(dir, 'loom.db');
const db = `sqlite:${sqlitePath}`;

let backend: Backend;
let running: Running;
let view: View;
let dashboard: Dashboard;
let browser: BrowserContext;
let page: Page;
const pageErrors: string[] = [];

/** Saves a screenshot under test-artifacts/, and under docs/img/ when LOOM_UPDATE_DOCS_IMG=1. */
async function shoot(name: string, selector?: string): Promise<void> {
  const path = join(artifacts, name);
  if (selector === undefined) await page.screenshot({ path, fullPage: true });
  else await page.locator(selector).screenshot({ path });
  if (process.env.LOOM_UPDATE_DOCS_IMG === '1') copyFileSync(path, join(docsImg, name));
}

beforeAll(async () => {
  mkdirSync(artifacts, { recursive: true });
  backend = await openSqlite({ path: sqlitePath, migrate: true });
  running = servingRuntime(backend);
  await (await running.flows.start(order, { id: '1' }, { executionId: 'order-1' })).result();
  await (await running.flows.start(failing, null, { executionId: 'charge-1' }))
    .result()
    .catch(() => undefined);
  await running.flows.start(waiting, null, { executionId: 'wait-1' });
  await running.agents.start(mailer, 'mail ana', { runId: 'agent-1' });
  await running.agents.start(asker, 'paint the door', { runId: 'ask-1' });
  view = await openView({ db });
  await until(async () => {
    const approvals = await view.pendingApprovals();
    return approvals.some((a) => a.runId === 'agent-1') ? true : undefined;
  }, 'agent-1 waiting for approval');
  await until(async () => {
    const questions = await view.pendingQuestions();
    return questions.some((q) => q.runId === 'ask-1') ? true : undefined;
  }, 'ask-1 waiting for an answer');
  dashboard = await startDashboard({ db, port: 0, pollMs: 100 });
  browser = await openBrowser(join(dir, 'chromium-profile'));
  page = await openPage(browser, dashboard.urlWithToken, pageErrors);
  await page.waitForSelector('tr[data-run="ask-1"]', { timeout: waitMs });
});

afterAll(async () => {
  await browser?.close();
  await dashboard?.close();
  await view?.close();
  await running?.flows.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

// Code run in the page (page.evaluate) reaches the DOM through these loose types: the DOM's own
// are not in this package's lib.
interface El {
  id: string;
  tagName: string;
  className: unknown;
  textContent: string | null;
  childNodes: ArrayLike<{ nodeType: number; textContent: string | null }>;
  children: ArrayLike<El>;
  parentElement: El | null;
  disabled?: boolean;
  style: { color: string; cssText: string };
  getBoundingClientRect(): { width: number; height: number };
  closest(selector: string): El | null;
  getAttribute(name: string): string | null;
  setAttribute(name: string, value: string): void;
  append(...nodes: El[]): void;
  remove(): void;
}
interface Style {
  color: string;
  fill: string;
  backgroundColor: string;
  opacity: string;
  fontSize: string;
  fontWeight: string;
  visibility: string;
  outlineStyle: string;
  outlineWidth: string;
}
interface Dom {
  document: {
    activeElement: El | null;
    body: El;
    querySelector(selector: string): El | null;
    querySelectorAll(selector: string): ArrayLike<El>;
    createElement(tag: string): El;
    getElementById(id: string): El | null;
  };
  getComputedStyle(node: El, pseudo?: string): Style & { content: string };
}
const textNode = 3;

/** The run whose row holds the focused element, or null. */
function focusedRun(): Promise<string | null> {
  return page.evaluate(() => {
    const { document } = globalThis as unknown as Dom;
    return document.activeElement?.closest('#runs-body tr')?.getAttribute('data-run') ?? null;
  });
}

/** The runs in the list, top to bottom. */
function listedRuns(): Promise<string[]> {
  return page
    .locator('#runs-body tr')
    .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-run') ?? ''));
}

interface ContrastFailure {
  text: string;
  where: string;
  ratio: number;
  color: string;
  background: string;
}

/**
 * Every visible element with text of its own (and every SVG text), its colour against the first
 * opaque background behind it (each layer's alpha and opacity blended), and the WCAG 2 contrast
 * ratio; returns those under 4.5:1 (3:1 for large text: 24 px, or 18.66 px bold). Disabled
 * controls are exempt, as WCAG exempts inactive components.
 */
function contrastFailures(
  target: Page = page,
): Promise<{ checked: number; labels: number; failures: ContrastFailure[] }> {
  return target.evaluate((textNodeType) => {
    const { document, getComputedStyle } = globalThis as unknown as Dom;
    type Rgba = [number, number, number, number];
    const parse = (value: string): Rgba => {
      const m = /rgba?\(([^)]+)\)/.exec(value);
      if (m === null) return [0, 0, 0, 0];
      const parts = (m[1] as string)
        .split(/[ ,/]+/)
        .filter(Boolean)
        .map(Number);
      return [parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0, parts[3] ?? 1];
    };
    const over = (top: Rgba, below: Rgba): Rgba => {
      const a = top[3];
      return [
        top[0] * a + below[0] * (1 - a),
        top[1] * a + below[1] * (1 - a),
        top[2] * a + below[2] * (1 - a),
        1,
      ];
    };
    const luminance = (c: Rgba) => {
      const channel = (v: number) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * channel(c[0]) + 0.7152 * channel(c[1]) + 0.0722 * channel(c[2]);
    };
    /** The colour behind `node`: its background layers, blended from the page's white up. */
    const backgroundOf = (node: El): Rgba => {
      const layers: Rgba[] = [];
      for (let at: El | null = node; at !== null; at = at.parentElement) {
        const bg = parse(getComputedStyle(at).backgroundColor);
        if (bg[3] > 0) layers.push(bg);
        if (bg[3] >= 1) break;
      }
      let color: Rgba = [255, 255, 255, 1];
      for (const layer of layers.reverse()) color = over(layer, color);
      return color;
    };
    const opacityOf = (node: El) => {
      let opacity = 1;
      for (let at: El | null = node; at !== null; at = at.parentElement) {
        opacity *= Number(getComputedStyle(at).opacity);
      }
      return opacity;
    };
    const failures: ContrastFailure[] = [];
    let checked = 0;
    let labels = 0;
    const check = (node: El, ownText: string, style: Style) => {
      const svg = node.closest('svg');
      const isSvgText = svg !== null;
      const background = backgroundOf(svg ?? node);
      const fg = parse(isSvgText ? style.fill : style.color);
      const color = over([fg[0], fg[1], fg[2], fg[3] * opacityOf(node)], background);
      const [l1, l2] = [luminance(color), luminance(background)].sort((a, b) => b - a) as [
        number,
        number,
      ];
      const ratio = (l1 + 0.05) / (l2 + 0.05);
      const px = Number.parseFloat(style.fontSize);
      const large = px >= 24 || (px >= 18.66 && Number(style.fontWeight) >= 700);
      checked += 1;
      if (ratio < (large ? 3 : 4.5)) {
        failures.push({
          text: ownText.slice(0, 40),
          where: `${node.tagName.toLowerCase()}${node.id ? `#${node.id}` : ''}.${String(node.className)}`,
          ratio: Math.round(ratio * 100) / 100,
          color: `rgb(${color.slice(0, 3).map(Math.round).join(',')})`,
          background: `rgb(${background.slice(0, 3).map(Math.round).join(',')})`,
        });
      }
    };
    for (const node of Array.from(document.querySelectorAll('body *'))) {
      const rect = node.getBoundingClientRect();
      const style = getComputedStyle(node);
      if (rect.width === 0 || rect.height === 0 || style.visibility === 'hidden') continue;
      if (node.disabled === true) continue;
      // <option>s are drawn by the system's list, not by this page's colours.
      if (node.tagName === 'OPTION' || node.closest('svg title') !== null) continue;
      const ownText = Array.from(node.childNodes)
        .filter((child) => child.nodeType === textNodeType)
        .map((child) => child.textContent ?? '')
        .join('')
        .trim();
      if (ownText !== '') check(node, ownText, style);
      // Text drawn by CSS (a narrow window's column labels, ::before each cell) counts too.
      const before = getComputedStyle(node, '::before');
      if (/^".+"$/.test(before.content)) {
        labels += 1;
        check(node, `${before.content} (::before)`, before);
      }
    }
    return { checked, labels, failures };
  }, textNode);
}

describe('the keyboard', () => {
  it('j/k and the arrows move through the runs, Enter opens one, Escape closes it and returns to its row', async () => {
    const runs = await listedRuns();
    expect(runs.length).toBeGreaterThanOrEqual(5);
    await page.locator('h1').click(); // nothing focused: the keys act on the list
    await page.keyboard.press('j');
    expect(await focusedRun()).toBe(runs[0]);
    await page.keyboard.press('j');
    expect(await focusedRun()).toBe(runs[1]);
    await page.keyboard.press('ArrowDown');
    expect(await focusedRun()).toBe(runs[2]);
    await page.keyboard.press('k');
    expect(await focusedRun()).toBe(runs[1]);
    await page.keyboard.press('ArrowUp');
    expect(await focusedRun()).toBe(runs[0]);
    // k at the top stays at the top.
    await page.keyboard.press('k');
    expect(await focusedRun()).toBe(runs[0]);
    // The focus is visible: an outline on the focused control and its row highlighted.
    const ring = await page.evaluate(() => {
      const { document, getComputedStyle } = globalThis as unknown as Dom;
      const active = document.activeElement as El;
      const style = getComputedStyle(active);
      const row = active.closest('tr') as El;
      return {
        outline: style.outlineStyle,
        width: Number.parseFloat(style.outlineWidth),
        rowBackground: getComputedStyle(row).backgroundColor,
      };
    });
    expect(ring.outline).toBe('solid');
    expect(ring.width).toBeGreaterThanOrEqual(2);
    expect(ring.rowBackground).not.toBe('rgba(0, 0, 0, 0)');
    await shoot('dashboard-keyboard.png', '#runs-pane');
    await page.keyboard.press('j');
    const opened = runs[1] as string;
    await page.keyboard.press('Enter');
    await page.waitForSelector(`#detail-head h2:text-is("${opened}")`, { timeout: waitMs });
    expect(page.url()).toContain(`#run=${encodeURIComponent(opened)}`);
    await page.keyboard.press('Escape');
    await page.waitForSelector('#detail', { state: 'hidden', timeout: waitMs });
    expect(await focusedRun()).toBe(opened);
    expect(page.url()).not.toContain('#run=');
  });

  it('/ goes to the search; typed keys stay in the field; Escape leaves it', async () => {
    await page.keyboard.press('/');
    const focusedId = () =>
      page.evaluate(() => (globalThis as unknown as Dom).document.activeElement?.id ?? '');
    expect(await focusedId()).toBe('search-id');
    await page.keyboard.type('jk');
    expect(await page.locator('#search-id').inputValue()).toBe('jk');
    await page.waitForSelector('#runs-count:text-is("no runs match")', { timeout: waitMs });
    await page.keyboard.press('Escape');
    expect(await focusedId()).not.toBe('search-id');
    await page.locator('#search-id').fill('');
    await page.locator('#search-id').dispatchEvent('change');
    await page.waitForSelector('tr[data-run="ask-1"]', { timeout: waitMs });
  });

  it('every control on the page is reached by Tab, in the runs list and with a run open', async () => {
    await page.getByRole('button', { name: 'agent-1', exact: true }).click();
    await page.waitForSelector('#conversation .approval[data-approval]', { timeout: waitMs });
    // The controls a person can use: visible, enabled buttons, fields, lists and links.
    const controls = await page.evaluate(() => {
      const { document } = globalThis as unknown as Dom;
      const out: string[] = [];
      Array.from(document.querySelectorAll('button, input, select, a[href], textarea')).forEach(
        (node, i) => {
          if (node.getBoundingClientRect().width === 0 || node.disabled === true) return;
          node.setAttribute('data-tab-probe', String(i));
          out.push(String(i));
        },
      );
      return out;
    });
    expect(controls.length).toBeGreaterThan(20);
    const reached = new Set<string>();
    await page.locator('h1').click();
    for (let press = 0; press < controls.length * 2 + 10; press += 1) {
      await page.keyboard.press('Tab');
      const probe = await page.evaluate(
        () =>
          (globalThis as unknown as Dom).document.activeElement?.getAttribute('data-tab-probe') ??
          null,
      );
      if (probe !== null) reached.add(probe);
      if (reached.size === controls.length) break;
    }
    const missed = await page.evaluate(
      (ids) =>
        ids.map((id) => {
          const { document } = globalThis as unknown as Dom;
          const node = document.querySelector(`[data-tab-probe="${id}"]`) as El;
          return `${node.tagName} ${node.id} ${node.textContent?.trim() ?? ''}`;
        }),
      controls.filter((id) => !reached.has(id)),
    );
    expect(missed).toEqual([]);
  });
});

// Before the approval and the question are answered below: agent-1 waits for an approval, ask-1
// for an answer, wait-1 for a signal.
describe('the runs list filtered by what a run waits for', () => {
  /** The ids the runs table shows once it shows `ids` (fails naming what it showed instead). */
  async function shows(ids: readonly string[]): Promise<void> {
    let shown: Array<string | null> = [];
    try {
      await until(
        async () => {
          shown = await page
            .locator('#runs-body tr[data-run]')
            .evaluateAll((rows) =>
              rows.map((row) => (row as unknown as El).getAttribute('data-run')),
            );
          return JSON.stringify(shown) === JSON.stringify(ids) ? true : undefined;
        },
        `the runs table to be [${ids.join(', ')}]`,
        waitMs,
      );
    } catch (error) {
      throw new Error(
        `${(error as Error).message}; it shows [${shown.join(', ')}] at ${page.url()}`,
      );
    }
  }

  it('an approval shows the agent run waiting for one, an answer the run that asked, and the counts follow', async () => {
    await page.goto(dashboard.urlWithToken);
    await page.waitForSelector('tr[data-run="order-1"]', { timeout: waitMs });
    await page.selectOption('#waiting-filter', 'approval');
    await shows(['agent-1']);
    expect(new URL(page.url()).searchParams.get('waiting')).toBe('approval');
    await page.waitForSelector('#status-counts button[data-status="all"][data-count="1"]', {
      timeout: waitMs,
    });
    await page.selectOption('#waiting-filter', 'question');
    await shows(['ask-1']);
    expect(new URL(page.url()).searchParams.get('waiting')).toBe('question');
    await page.selectOption('#waiting-filter', 'signal');
    await shows(['wait-1']);
    await page.selectOption('#waiting-filter', 'child');
    await shows([]);
    // A link with the filter opens on it (the select says so).
    const linked = new URL(dashboard.urlWithToken);
    linked.searchParams.set('waiting', 'question');
    await page.goto(linked.toString());
    await shows(['ask-1']);
    expect(await page.locator('#waiting-filter').inputValue()).toBe('question');
    await page.goto(dashboard.urlWithToken);
    await page.waitForSelector('tr[data-run="order-1"]', { timeout: waitMs });
  });
});

describe('contrast', () => {
  it('every text in the runs list is at least 4.5:1 against its background (3:1 when large)', async () => {
    await page.keyboard.press('Escape');
    await page.waitForSelector('#detail', { state: 'hidden', timeout: waitMs });
    await page.waitForSelector('#queues-box, #runs-body tr', { timeout: waitMs });
    const { checked, failures } = await contrastFailures();
    expect(checked).toBeGreaterThan(40);
    expect(failures).toEqual([]);
    // The check fails where it should: grey #999 on the page's #f6f7f9 is 2.66:1; the read-only
    // badge's orange of before (#b26a00 under white text) was 4.24:1 (now #8a5200).
    await page.evaluate(() => {
      const { document } = globalThis as unknown as Dom;
      const probe = document.createElement('p');
      probe.id = 'contrast-probe';
      probe.append(Object.assign(document.createElement('span'), { textContent: 'pale' }));
      probe.append(Object.assign(document.createElement('span'), { textContent: 'old badge' }));
      (probe.children[0] as El).style.color = '#999999';
      (probe.children[1] as El).style.cssText = 'color:#fff;background:#b26a00';
      document.body.append(probe);
    });
    const probed = await contrastFailures();
    await page.evaluate(() =>
      (globalThis as unknown as Dom).document.getElementById('contrast-probe')?.remove(),
    );
    expect(probed.failures.map((f) => [f.text, f.ratio])).toEqual([
      ['pale', 2.66],
      ['old badge', 4.24],
    ]);
  });

  it('and with an agent run open: its conversation with the approval inline, the timeline, the events', async () => {
    await page.getByRole('button', { name: 'agent-1', exact: true }).click();
    await page.waitForSelector('#conversation .approval[data-approval]', { timeout: waitMs });
    await page.waitForSelector('#events-body tr', { timeout: waitMs });
    const { checked, failures } = await contrastFailures();
    expect(checked).toBeGreaterThan(60);
    expect(failures).toEqual([]);
  });
  it('and read-only in a narrow window (runs as cards with CSS labels), an agent run open', async () => {
    const readOnly = await startDashboard({ db, port: 0, readOnly: true, pollMs: 100 });
    const narrow = await browser.newPage();
    try {
      await narrow.setViewportSize({ width: 480, height: 900 });
      await narrow.goto(readOnly.url);
      await narrow.waitForSelector('#mode:text-is("read-only")', { timeout: waitMs });
      await narrow.getByRole('button', { name: 'agent-1', exact: true }).click();
      await narrow.waitForSelector('#conversation .approval[data-approval]', { timeout: waitMs });
      const { checked, labels, failures } = await contrastFailures(narrow);
      expect(checked).toBeGreaterThan(60);
      // Each run is a card: seven labelled cells a run, five runs.
      expect(labels).toBe(35);
      expect(failures).toEqual([]);
    } finally {
      await narrow.close();
      await readOnly.close();
    }
  });
});

describe('approvals and questions inline in the conversation', () => {
  it('a pending approval at its call with the call input, approved there; then who decided and when', async () => {
    await page.locator('#by').fill('ana');
    await page.locator('#by').dispatchEvent('change');
    const card = page.locator('#conversation .turn[data-turn="1"]');
    const approval = card.locator('.approval[data-approval]');
    await approval.getByRole('button', { name: 'Approve' }).waitFor({ timeout: waitMs });
    // The call it belongs to comes just before it, with its input.
    expect(await card.locator('.call').first().textContent()).toBe('send_mail({"to":"ana"})');
    expect(await approval.textContent()).toContain('send_mail {"to":"ana"}');
    await shoot('dashboard-inline-approval.png', '#conversation');
    await approval.getByRole('button', { name: 'Approve' }).click();
    await page.waitForSelector('#flash:has-text("approved agent-1~")', { timeout: waitMs });
    await page.waitForSelector('#run-status:text-is("completed")', { timeout: waitMs });
    const decided = card.locator('.approval.decided');
    await decided.waitFor({ timeout: waitMs });
    const [record] = (await view.show('agent-1')).approvals;
    const at = new Date(record?.decision?.decidedAtMs ?? 0).toISOString().replace('T', ' ');
    expect(await decided.locator('.status').textContent()).toBe(
      `approved by ana at ${at.slice(0, 23)}`,
    );
    expect(await page.locator('#approvals .approval').count()).toBe(0);
  });

  it('a pending question at its turn, answered there; then who answered, what and when', async () => {
    await page.getByRole('button', { name: 'ask-1', exact: true }).click();
    const card = page.locator('#conversation .turn[data-turn="1"]');
    const question = card.locator('.question[data-question]');
    await question.waitFor({ timeout: waitMs });
    expect(await question.textContent()).toContain('Which colour, exactly?');
    await shoot('dashboard-inline-question.png', '#conversation');
    await question.getByLabel('the answer to ask-1~1.0').fill('teal');
    await question.getByRole('button', { name: 'Answer' }).click();
    await page.waitForSelector('#flash:has-text("answered ask-1~1.0")', { timeout: waitMs });
    await page.waitForSelector('#run-status:text-is("completed")', { timeout: waitMs });
    const answered = card.locator('.question.decided');
    await answered.waitFor({ timeout: waitMs });
    const [record] = (await view.show('ask-1')).questions;
    expect(record?.answer).toMatchObject({ by: 'ana', text: 'teal' });
    const at = new Date(record?.answer?.answeredAtMs ?? 0).toISOString().replace('T', ' ');
    expect(await answered.locator('.status').textContent()).toBe(
      `answered by ana: teal (at ${at.slice(0, 23)})`,
    );
    expect(await page.locator('#questions .question').count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});
