// The progress line of the built `loom` binary: on a terminal (a real pseudo-terminal, through
// util-linux `script`) long commands write `label… <done> (<s> s)` to stderr, rewritten in place
// and erased at the end; piped, or with --json, they write none. The 1 s threshold is moved to 0
// with LOOM_PROGRESS_AFTER_MS (test-only), so the lines' content is asserted, not their timing.
import { fileURLToPath } from 'node:url';
import type { EventEnvelope } from '@loom/event-runtime';
import { killTestProcesses, spawnTestCommand } from '@loom/event-runtime/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbTargets } from './db-targets.js';
import { loom } from './fixture.js';
import { seedRuns } from './many-runs.js';

const { targets, cleanup } = dbTargets('view-progress');
afterAll(async () => {
  await killTestProcesses();
  await cleanup();
});

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
/** Events of the one long run (three pages of the store's 10,000). */
const bulkEvents = 25_001;
const seeded = 200;
/** Every execution: the seeded runs, their two templates, and the long run. */
const executions = seeded + 3;

/** The progress line's erase (carriage return, erase line), as a regular expression. */
const clear = '\\r\\x1b\\[2K';

const count = (n: number) => n.toLocaleString('en-US');

const quote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`;

/** The binary on a pseudo-terminal: stdout and stderr both arrive on it, in order. */
async function loomOnTty(
  args: readonly string[],
  env: Record<string, string>,
  /** Stop it (SIGTERM to the terminal's session) once the output contains this. */
  until?: string,
): Promise<{ code: number | null; output: string }> {
  const command = [process.execPath, bin, ...args].map(quote).join(' ');
  const tty = spawnTestCommand('script', {
    args: ['-qec', command, '/dev/null'],
    inheritEnv: false,
    env: { PATH: process.env.PATH ?? '', TERM: 'dumb', ...env },
    name: `loom ${args[0]} on a terminal`,
  });
  if (until !== undefined) {
    await tty
      .waitFor(() => tty.stdout().includes(until), until, 60_000)
      .then(() => tty.child.kill('SIGTERM'))
      .catch(() => undefined); // ended before (or stuck: then killed at its deadline)
  }
  const { code } = await tty.exit;
  return { code, output: tty.stdout() };
}

describe.each(targets)('the progress line on $name', (target) => {
  const env = { LOOM_DB: target.db, LOOM_PROGRESS_AFTER_MS: '0' };

  beforeAll(async () => {
    const backend = await target.open();
    const started = Date.now();
    const events: EventEnvelope[] = [
      {
        executionId: 'bulk',
        sequence: 0,
        type: 'execution.started',
        payload: { flow: 'bulk', version: null, input: null },
        at: started,
      },
    ];
    for (let i = 1; i < bulkEvents; i += 2) {
      const step = { index: (i - 1) / 2, name: `s${i}` };
      events.push({ executionId: 'bulk', sequence: i, type: 'step.started', payload: step });
      events.push({
        executionId: 'bulk',
        sequence: i + 1,
        type: 'step.completed',
        payload: { ...step, result: i },
      });
    }
    for (let from = 0; from < events.length; from += 1_000) {
      await backend.events.append(events.slice(from, from + 1_000));
    }
    await seedRuns(backend, seeded); // closes the backend
  });

  it('piped (not a terminal), no progress line is written, whatever the threshold', async () => {
    const verified = await loom(['verify', '--all'], env);
    expect(verified.code).toBe(0);
    expect(verified.stderr).toBe(`verified ${executions} executions, 0 broken\n`);
    const exported = await loom(['export', 'bulk'], env);
    expect(exported.code).toBe(0);
    expect(exported.stderr).toBe(`exported ${bulkEvents} events of bulk\n`);
    const runs = await loom(['runs', '--limit', '1000'], env);
    expect(runs.code).toBe(0);
    expect(runs.stderr).toBe('');
  });

  it('on a terminal, verify --all counts executions and export counts events, then erases the line', async () => {
    const verified = await loomOnTty(['verify', '--all'], env);
    expect(verified.code).toBe(0);
    expect(verified.output).toMatch(
      new RegExp(`${clear}verifying… ${executions} executions checked \\(\\d+\\.\\d s\\)`),
    );
    expect(verified.output).toContain('verifying… 1 executions checked');
    // Erased before the summary line.
    expect(verified.output).toMatch(
      new RegExp(`\\(\\d+\\.\\d s\\)${clear}verified ${executions} executions, 0 broken`),
    );

    const exported = await loomOnTty(['export', 'bulk'], env);
    expect(exported.code).toBe(0);
    for (const done of ['10,000', '20,000', '25,001']) {
      expect(exported.output).toContain(`exporting bulk… ${done} events (`);
    }

    const runs = await loomOnTty(['runs', '--limit', '1000'], env);
    expect(runs.code).toBe(0);
    expect(runs.output).toMatch(new RegExp(`${clear}reading runs… \\(\\d+\\.\\d s\\)`));
  });

  it("on a terminal, tail without an id counts the events it reads to find the log's end", async () => {
    const following = 'following every run after log position';
    const tail = await loomOnTty(['tail'], env, following);
    expect(tail.output).toContain(following);
    for (const done of ['10,000', '20,000']) {
      expect(tail.output).toContain(`finding the log's end… ${done} events (`);
    }
  });

  it('on a terminal, tail <id> counts the events it catches up on, then erases the line', async () => {
    // The run never ends: stopped once the last event of the catch-up is shown.
    const last = `${bulkEvents - 1}\t`;
    const tail = await loomOnTty(
      ['tail', 'bulk'],
      env,
      `catching up on bulk… ${count(bulkEvents)} of`,
    );
    for (const done of ['500', '10,000', '25,000', '25,001']) {
      expect(tail.output).toContain(`catching up on bulk… ${done} of 25,001 events (`);
    }
    // Each batch's lines are written on an erased line, never after the progress text.
    expect(tail.output).not.toMatch(/events \(\d+\.\d s\)\d/);
    expect(tail.output).toContain(last);
    // Under the threshold (a catch-up of one event), no line.
    const quick = await loomOnTty(
      ['tail', 'bulk', '--from', '25000'],
      { ...env, LOOM_PROGRESS_AFTER_MS: '60000' },
      '25000\t',
    );
    expect(quick.output).toContain('25000\t');
    expect(quick.output).not.toContain('catching up on bulk…');
  });

  it('on a terminal with --json, no progress line is written', async () => {
    const verified = await loomOnTty(['verify', '--all', '--json'], env);
    expect(verified.code).toBe(0);
    expect(verified.output).not.toContain('verifying…');
    expect(JSON.parse(verified.output.slice(verified.output.indexOf('{')))).toEqual({
      checked: executions,
      broken: [],
      receipts: { events: 0, prunedRuns: 0 },
    });
    const exported = await loomOnTty(['export', 'bulk', '--json'], env);
    expect(exported.code).toBe(0);
    expect(exported.output).not.toContain('exporting bulk…');
  });
});
