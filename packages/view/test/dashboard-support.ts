// Helpers of the dashboard tests: a runtime that serves the fixture's runs (so a decision made on
// the page really continues the run), raw HTTP requests (to send any Host header), and waits
// with deadlines.
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { createAgentRuntime } from '@loom/agent-loop';
import type { Backend } from '@loom/event-runtime';
import { createRuntime } from '@loom/workflow-runtime';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { allFlows, asker, mailer, type Running } from './fixture.js';

/** Debian's Chromium (scripts/ensure-chromium.sh installs it). */
export const chromiumPath = '/usr/bin/chromium';
const chromiumArgs = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Headless Chromium with its profile in the folder `profileDir`. */
export async function openBrowser(profileDir: string): Promise<BrowserContext> {
  if (!existsSync(chromiumPath)) {
    throw new Error(`${chromiumPath} is missing: run bash scripts/ensure-chromium.sh`);
  }
  return chromium.launchPersistentContext(profileDir, {
    executablePath: chromiumPath,
    headless: true,
    args: chromiumArgs,
    viewport: { width: 1400, height: 900 },
  });
}

/**
 * A new page of `browser` at `url`; its script errors and console errors (a CSP violation is
 * one) are pushed to `errors`.
 */
export async function openPage(
  browser: BrowserContext,
  url: string,
  errors: string[],
): Promise<Page> {
  const page = await browser.newPage();
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  await page.goto(url);
  return page;
}

/**
 * A runtime that runs every fixture flow and the agent and polls for due runs every 50 ms: a
 * run the dashboard approved, signalled or cancelled goes on here, in this process.
 */
export function servingRuntime(backend: Backend): Running {
  const flows = createRuntime({ backend, flows: allFlows, timerPollMs: 50 });
  return { flows, agents: createAgentRuntime({ flows, agents: [mailer, asker] }) };
}

/** Polls `probe` until it returns something; fails after `deadlineMs` (real time). */
export async function until<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  deadlineMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export interface Reply {
  status: number;
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}

/** One HTTP request with exactly these headers (node:http lets a test set `Host`). */
export function http(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const text = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        headers: {
          ...(text === undefined ? {} : { 'content-type': 'application/json' }),
          ...options.headers,
        },
        timeout: 30_000,
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          data += chunk;
        });
        res.on('end', () => {
          let body: unknown = data;
          try {
            body = JSON.parse(data);
          } catch {
            // not JSON: keep the text (the page, a script)
          }
          resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer in 30 s`)));
    req.on('error', reject);
    if (text !== undefined) req.write(text);
    req.end();
  });
}

/** Reads a server-sent-events stream until an event named `name` arrives; returns its data. */
export async function firstEvent(url: string, name: string): Promise<unknown> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 30_000);
  try {
    const response = await fetch(url, { signal: controller.signal });
    if (response.body === null) throw new Error('no stream');
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of response.body) {
      buffered += decoder.decode(chunk as Uint8Array, { stream: true });
      for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const lines = block.split('\n');
        const event = lines
          .find((l) => l.startsWith('event:'))
          ?.slice(6)
          .trim();
        const data = lines
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trimStart())
          .join('\n');
        if (event === name) return JSON.parse(data);
      }
    }
    throw new Error(`the stream ended before a '${name}' event`);
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}
