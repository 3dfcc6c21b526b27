// What the built `loom` binary loads before it does anything: every call pays for each ES module
// it loads (the whole projection through kysely was ~260 modules, the dashboard's hono ~35), so
// a command loads only what it uses. Counted with a `load` hook (load-recorder.mjs) that writes
// each loaded URL to a file; the assertions are on sets of modules, never on time.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSqlite } from '@loom/event-runtime/sqlite';
import { killTestProcesses, spawnTestProcess } from '@loom/event-runtime/testing';
import { createRuntime } from '@loom/workflow-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { order } from './fixture.js';

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const recorder = fileURLToPath(new URL('./load-recorder.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'loom-cli-startup-'));
const db = `sqlite:${join(dir, 'loom.db')}`;

afterAll(async () => {
  await killTestProcesses();
  rmSync(dir, { recursive: true, force: true });
});

beforeAll(async () => {
  const backend = openSqlite({ path: join(dir, 'loom.db'), migrate: true });
  const flows = createRuntime({ backend, flows: [order], timerPollMs: 0 });
  await (await flows.start(order, { id: '7' }, { executionId: 'order-7' })).result();
  await flows.shutdown();
  await backend.close();
});

/** The packages (`kysely`, `hono`, `@loom/agent-loop`, …) of every module `loom <args>` loaded. */
async function packagesLoadedBy(
  args: readonly string[],
): Promise<{ code: number | null; stdout: string; urls: string[]; packages: Set<string> }> {
  const record = join(dir, `loaded-${args[0]?.replace(/\W/g, '')}.txt`);
  rmSync(record, { force: true });
  const run = spawnTestProcess(bin, {
    args,
    nodeArgs: ['--import', recorder],
    inheritEnv: false,
    env: { PATH: process.env.PATH ?? '', LOOM_LOAD_RECORD: record },
    name: `loom ${args.join(' ')}`,
    deadlineMs: 30_000,
  });
  const { code } = await run.exit;
  const urls = [...new Set(readFileSync(record, 'utf8').split('\n').filter(Boolean))];
  const packages = new Set<string>();
  for (const url of urls) {
    // pnpm's store (`.pnpm/<name>@<version>/node_modules/<name>/…`) or a workspace package.
    const installed = /\/node_modules\/((?:@[^/]+\/)?[^/.][^/]*)\/(?!.*\/node_modules\/)/.exec(url);
    const workspace = /\/(?:packages|plugins)\/([^/]+)\/dist\//.exec(url);
    if (installed?.[1] !== undefined) packages.add(installed[1]);
    else if (workspace?.[1] !== undefined) packages.add(`@loom/${workspace[1]}`);
  }
  return { code, stdout: run.stdout(), urls, packages };
}

/** What no command that neither reads the projection nor serves the dashboard may load. */
const heavy = ['kysely', 'hono', '@hono/node-server', 'pg'];

describe('what the loom command loads', () => {
  it('loom --help loads neither the projection, the dashboard, pg nor the runtimes', async () => {
    const help = await packagesLoadedBy(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: loom');
    // The recorder saw the command itself: an empty record would pass every check below.
    expect(help.packages).toContain('commander');
    expect(help.urls.some((url) => url.endsWith('/view/dist/run-cli.js'))).toBe(true);
    const loaded = [...help.packages];
    expect(loaded.filter((name) => heavy.includes(name))).toEqual([]);
    expect(
      loaded.filter((name) =>
        ['@loom/agent-loop', '@loom/workflow-runtime', '@loom/reasoning'].includes(name),
      ),
    ).toEqual([]);
  });

  it("loom show reads a flow's run without the projection, the dashboard or the agent loop", async () => {
    const show = await packagesLoadedBy(['show', 'order-7', '--db', db, '--json']);
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({
      run: { id: 'order-7', status: 'completed' },
    });
    expect(show.packages).toContain('@loom/event-runtime');
    expect([...show.packages].filter((name) => heavy.includes(name))).toEqual([]);
    expect(show.packages.has('@loom/agent-loop')).toBe(false);
  });

  it('loom runs loads kysely only once the database has projection tables to read', async () => {
    const before = await packagesLoadedBy(['runs', '--db', db, '--json']);
    expect(before.code).toBe(0);
    expect(JSON.parse(before.stdout).runs.map((run: { id: string }) => run.id)).toEqual([
      'order-7',
    ]);
    expect([...before.packages].filter((name) => heavy.includes(name))).toEqual([]);
    expect(before.packages.has('@loom/agent-loop')).toBe(false); // a page without agent runs

    const init = await packagesLoadedBy(['projections', 'init', '--db', db]);
    expect(init.code).toBe(0);
    // The counterpart of the checks above: the recorder does see kysely when a command loads it.
    const after = await packagesLoadedBy(['runs', '--db', db, '--json']);
    expect(after.code).toBe(0);
    expect(after.stdout).toBe(before.stdout);
    expect(after.packages).toContain('kysely');
    expect(after.packages.has('hono')).toBe(false);
  });
});
