// The AI SDK's own `useChat` (@ai-sdk/react) in a real browser against a Loom thread: issue 29's
// last gap. A React page (page/chat-page.tsx, the code docs/agents.md shows) is bundled by esbuild
// here and served with `/api/chat` forwarded to `loom chat --flows examples/trial/support.ts` (the
// user's zero-code endpoint); a `loom worker` runs the agent on a SQLite file and is SIGKILLed
// while the run waits for a person, a second worker carries it on; the model is the local
// chat-completions SSE server of the trial test; a person answers with `loom answer` from
// another process. Chromium (headless, playwright-core) types a message and reads what the page
// renders: the question the agent asks, the answer streaming in (each piece is written by the
// model only once the page shows the one before), the structured answer, the page reloaded
// mid-answer and `resume: true` picking the turn back up with no piece twice, and a failed model
// call as useChat's `error`. The session runs in four phases, a test each.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { killTestProcesses, spawnTestProcess, type TestProcess } from '@loom/event-runtime/testing';
import type { Browser, Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ChatCompletionsServer,
  type ChatMove,
} from '../../demo/chat-completions-server.test-support.js';
import { openChromium } from './chromium.js';
import { type SameOriginServer, startSameOriginServer } from './same-origin-server.js';

const trial = fileURLToPath(new URL('../../examples/trial/', import.meta.url));
const pageSource = fileURLToPath(new URL('./page/chat-page.tsx', import.meta.url));
const agentsDoc = fileURLToPath(new URL('../../../../docs/agents.md', import.meta.url));
// The `loom` command is @loom/view's (which depends on this package): its built binary.
const loomBin = fileURLToPath(new URL('../../../view/dist/bin.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'loom-usechat-'));
const db = `sqlite:${join(dir, 'loom.db')}`;
afterAll(async () => {
  await killTestProcesses();
  rmSync(dir, { recursive: true, force: true });
});

const waitMs = 20_000;
const question = 'Which order do you mean?';
const answer = { reply: 'Order A-17 ships tomorrow morning.', orderId: 'A-17' };
const answerText = JSON.stringify(answer);
/** The answer in the pieces the model writes: about a word each. */
const pieces = answerText.match(/[^ ]+ ?/g) as string[];
/** The page is reloaded once it shows this many pieces. */
const piecesBeforeReload = 3;
const refusal = 'The model `trial-model` is overloaded: try again later.';

const html = `<!doctype html>
<html lang="en">
  <head><meta charset="utf-8"><title>Support</title></head>
  <body><div id="root"></div><script type="module" src="/chat.js"></script></body>
</html>`;

/** The page's code bundled for the browser (React, useChat, the AI SDK), as one ES module. */
async function bundlePage(): Promise<string> {
  const { build } = await import('esbuild');
  const built = await build({
    entryPoints: [pageSource],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'chrome120',
    jsx: 'automatic',
    minify: true,
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  const [file] = built.outputFiles;
  if (file === undefined) throw new Error('esbuild wrote no bundle of page/chat-page.tsx');
  return file.text;
}

/** `loom <args>` as a process of its own, on the test's database. */
function loom(args: readonly string[]) {
  return spawnTestProcess(loomBin, {
    args: [...args, '--db', db],
    nodeArgs: [],
    name: `loom ${args[0]}`,
    deadlineMs: 30_000,
  }).ended();
}

/**
 * Polls `check` every 25 ms (each try of a page check is a round trip to Chromium: a 5 ms poll
 * would load a busy machine) until it holds; fails naming `what` after `waitMs`.
 */
async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${waitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The text the page shows of the assistant's messages (every text part, in order). */
async function shownText(page: Page): Promise<string> {
  try {
    return (await page.locator('section.assistant p.text').allTextContents()).join('');
  } catch {
    return ''; // the page is between two documents (a reload)
  }
}

describe('useChat in Chromium against a Loom thread (loom chat + two loom workers, SQLite)', () => {
  // One session of a person at the page, in four phases, each a test within the default timeout
  // (nine processes and a browser: 29-44 s in one test on a loaded 2-core box). A phase runs only
  // when the one before it passed: `phase` counts the phases that did.
  let phase = 0;
  const after = (done: number, what: string) => {
    if (phase !== done) throw new Error(`skipped: ${what} did not pass`);
  };
  let page: Page | undefined;
  let reloadDone: () => void = () => undefined;
  const reloaded = new Promise<void>((resolve) => {
    reloadDone = resolve;
  });
  let gatesOpened = 0;
  // Resolves once the page shows `length` characters of the answer.
  const seen = async (length: number) => {
    await until(
      async () => page !== undefined && (await shownText(page)).length >= length,
      `the page showing ${length} characters of the answer`,
    );
    gatesOpened++;
  };
  let model: ChatCompletionsServer | undefined;
  let browser: Browser | undefined;
  let web: SameOriginServer | undefined;
  let worker1: TestProcess | undefined;
  let worker2: TestProcess | undefined;
  let chat: TestProcess | undefined;
  let questionId = '';
  const pageErrors: string[] = [];
  const resumePath = '/api/chat/chat-ana/stream';
  const forwarded = (method: string, path: string, status: number) =>
    (web?.forwarded ?? []).filter(
      (f) => f.method === method && f.path === path && f.status === status,
    ).length;
  const startWorker = (n: number) =>
    spawnTestProcess(loomBin, {
      nodeArgs: [],
      args: [
        'worker',
        '--db',
        db,
        '--flows',
        join(trial, 'support.ts'),
        '--poll',
        '50',
        ...(n === 1 ? ['--migrate'] : []),
      ],
      env: {
        LOOM_OPENAI_BASE_URL: (model as ChatCompletionsServer).baseUrl,
        LOOM_OPENAI_MODEL: 'trial-model',
      },
      name: `loom worker ${n}`,
    });
  /** Runs one phase; a failure says what the page and the chat endpoint were doing. */
  const phaseOf = async (done: number, what: string, work: (opened: Page) => Promise<void>) => {
    after(done, what);
    try {
      await work(page as Page);
    } catch (error) {
      const shown = page === undefined ? '' : await page.locator('main').innerHTML().catch(String);
      const calls = (web?.forwarded ?? []).map((f) => `${f.method} ${f.path} ${f.status}`);
      throw new Error(
        `${error instanceof Error ? error.message : String(error)}\npage: ${shown}\nforwarded: ${calls.join(', ')}`,
        { cause: error },
      );
    }
    phase = done + 1;
  };
  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await model?.close();
  });

  it('the page mounts (resume: 204), sends a message, and shows the question the agent asks', async () => {
    // The model: the first call asks a person, the second answers piece by piece (each once the
    // page shows the one before; after the third, once the page was reloaded), any later call is
    // refused as an overloaded provider refuses it.
    const started = await ChatCompletionsServer.start({
      move: (): ChatMove => {
        const calls = started.requests.length;
        if (calls === 1) return { tool: 'ask_human', input: { question } };
        if (calls === 2) return { text: answerText };
        return { refuse: { status: 400, message: refusal } };
      },
      pieces: async function* () {
        let written = 0;
        for (const [index, piece] of pieces.entries()) {
          yield piece;
          written += piece.length;
          if (index === piecesBeforeReload - 1) await reloaded;
          if (index < pieces.length - 1) await seen(written);
        }
      },
    });
    model = started;
    worker1 = startWorker(1);
    const [script] = await Promise.all([bundlePage(), worker1.line('loom: worker ', waitMs)]);
    chat = spawnTestProcess(loomBin, {
      nodeArgs: [],
      args: ['chat', '--db', db, '--flows', join(trial, 'support.ts'), '--port', '0'],
      env: { LOOM_OPENAI_BASE_URL: started.baseUrl, LOOM_OPENAI_MODEL: 'trial-model' },
      name: 'loom chat',
    });
    const chatUrl = (await chat.match(/on (http:\S+)/, 'loom chat to listen', waitMs))[1];
    web = await startSameOriginServer(chatUrl as string, html, script);
    browser = await openChromium();
    const opened = await browser.newPage();
    opened.on('pageerror', (error) => pageErrors.push(error.message));
    page = opened;
    await phaseOf(0, 'nothing', async () => {
      // On mount, resume: true asks for a running turn: none yet (204).
      await opened.goto((web as SameOriginServer).url);
      await until(
        () => forwarded('GET', resumePath, 204) === 1,
        'the page’s resume request answered 204',
      );
      await opened.locator('input').fill('Where is my order?');
      await opened.locator('button[type=submit]').click();

      // The agent asks a person: the data-loom-question part, with the question's id.
      const asked = opened.locator('p.question');
      await asked.waitFor({ timeout: waitMs });
      expect(await asked.textContent()).toBe(question);
      questionId = (await asked.getAttribute('data-question-id')) ?? '';
      expect(questionId).toBe('chat-ana/1~1.0');
      expect(forwarded('POST', '/api/chat', 200)).toBe(1);
    });
  });

  it('the run waits with no process holding it; worker 1 is SIGKILLed and worker 2 starts', async () => {
    await phaseOf(1, 'the question', async () => {
      // Whatever the page shows from here on, worker 2 ran. Waited for from this process (a
      // `loom show` spawned every 25 ms cost a process start each, most of a loaded box's
      // time), then seen once as a person sees it from a shell.
      const { openSqlite } = await import('@loom/workflow-runtime/sqlite');
      const backend = await openSqlite({ path: join(dir, 'loom.db') });
      try {
        await until(async () => {
          const suspended = await backend.events.findExecutions({ status: 'suspended' });
          return suspended.some((execution) => execution.executionId === 'chat-ana/1');
        }, 'run chat-ana/1 suspended on the question');
      } finally {
        await backend.close();
      }
      const shown = await loom(['show', 'chat-ana/1', '--json']);
      expect(shown.code, shown.stderr).toBe(0);
      expect(JSON.parse(shown.stdout).run.status).toBe('suspended');
      expect((await (worker1 as TestProcess).kill()).signal).toBe('SIGKILL');
      worker2 = startWorker(2);
      await worker2.line('loom: worker ', waitMs);
    });
  });

  it('after loom answer the answer streams into the page from worker 2; a reload mid-answer resumes it with no piece twice; the structured answer shows', async () => {
    await phaseOf(2, 'the SIGKILL', async (opened) => {
      // A person answers from another process; the run goes on in worker 2 and its answer
      // streams into the same page, a piece at a time.
      const answered = await loom(['answer', questionId, 'A-17', '--by', 'ana']);
      expect(answered.code, answered.stderr).toBe(0);
      const beforeReload = pieces.slice(0, piecesBeforeReload).join('');
      await until(
        async () => (await shownText(opened)) === beforeReload,
        `the page showing the answer's first ${piecesBeforeReload} pieces`,
      );
      expect(pageErrors).toEqual([]);

      // Reload mid-answer: the new page's resume: true GET picks the turn back up (its text so
      // far, then the rest live, which the model writes only now).
      await opened.reload();
      reloadDone();
      await opened.locator('dd.order-id').waitFor({ timeout: waitMs });
      await until(
        async () => (await opened.locator('output.status').textContent()) === 'ready',
        'useChat ready after the answer',
      );
      // Every piece once and in order: the rendered text is the answer, exactly.
      expect(await shownText(opened)).toBe(answerText);
      expect(gatesOpened).toBe(pieces.length - 1);
      expect(forwarded('GET', resumePath, 200)).toBe(1);
      // The structured answer, from the data-loom-output part (the agent's output schema).
      expect(await opened.locator('dd.order-id').textContent()).toBe(answer.orderId);
      expect(await opened.locator('dd.reply').textContent()).toBe(answer.reply);
      // The replayed turn shows its question once, in one assistant message.
      expect(await opened.locator('p.question').count()).toBe(1);
      expect(await opened.locator('section.assistant').count()).toBe(1);
      expect(await opened.locator('[role=alert]').count()).toBe(0);
      // The model was asked twice (the question, the answer): the reload asked it nothing again.
      expect((model as ChatCompletionsServer).requests).toHaveLength(2);
      // Nothing runs on the thread now: the resume GET is 204.
      expect((await fetch(new URL(resumePath, (web as SameOriginServer).url))).status).toBe(204);
    });
  });

  it('a second message whose model call fails shows useChat’s error, the run’s reason first; the processes stop cleanly', async () => {
    await phaseOf(3, 'the answer', async (opened) => {
      await opened.locator('input').fill('Cancel it, please.');
      await opened.locator('button[type=submit]').click();
      const alert = opened.locator('[role=alert]');
      await alert.waitFor({ timeout: waitMs });
      const errorText = (await alert.textContent()) ?? '';
      expect(errorText.startsWith('model_failed: ')).toBe(true);
      expect(errorText).toContain(refusal);
      expect(await opened.locator('output.status').textContent()).toBe('error');
      expect(forwarded('POST', '/api/chat', 200)).toBe(2);
      // Every call after the first turn's two was refused.
      const requests = (model as ChatCompletionsServer).requests;
      expect(requests.every((r) => r.path === '/v1/chat/completions')).toBe(true);
      expect(requests.length).toBeGreaterThanOrEqual(3);
      expect(pageErrors).toEqual([]);

      const stopping = worker2 as TestProcess;
      stopping.child.kill('SIGTERM');
      expect((await stopping.ended(waitMs)).code).toBe(0);
      (chat as TestProcess).child.kill('SIGTERM');
      expect((await (chat as TestProcess).ended(waitMs)).code).toBe(0);
    });
  });

  it('docs/agents.md shows the page this test runs', () => {
    const source = readFileSync(pageSource, 'utf8');
    const code = source.slice(source.indexOf('\nimport ') + 1);
    expect(readFileSync(agentsDoc, 'utf8')).toContain(`\`\`\`tsx\n${code}\`\`\``);
  });
});
