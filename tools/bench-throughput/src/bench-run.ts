import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { dropPostgres, type PgTarget, reachPostgres } from './bench-backend.js';
import {
  agentEnv,
  type BenchScript,
  commandLine,
  type Env,
  type Knobs,
  leaseEnv,
  peersEnv,
  readKnobs,
} from './knobs.js';
import { describeMachine, type Machine, machineMarkdown } from './machine.js';
import { busyShareBetween, readCpuJiffies } from './proc-stat.js';
import { Progress } from './progress.js';

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** Where JSON results go (gitignored). */
export const resultsDir = join(packageDir, 'results');
/** Where charts go, for docs/benchmarks.md. */
export const chartsDir = resolve(packageDir, '../../docs/img');

/** Everything a suite needs: knobs, where to write, the databases it may use. */
export interface RunContext {
  knobs: Knobs;
  command: string;
  /** The command that runs one section of `bench` alone (same knobs otherwise). */
  commandFor(section: string): string;
  progress: Progress;
  /** The run's temporary directory (SQLite files); removed at the end. */
  tmpDir: string;
  /** The Postgres target, or why there is none. */
  pg: PgTarget | string;
  /** Write a chart to docs/img; returns its path relative to docs/. */
  chart(fileName: string, svg: string): string;
}

/** What a suite hands back: Markdown for stdout, cells for the JSON file. */
export interface SectionReport {
  id: string;
  title: string;
  markdown: string;
  cells: unknown[];
  skipped: string[];
  /** Plain lines printed last, after the JSON path: the section's answer in one line each. */
  summary?: string[];
}

export type Section = (context: RunContext) => Promise<SectionReport>;

/**
 * Runs sections one after another (never two at once: they would measure each other), with a
 * throwaway Postgres schema and temporary directory that are removed at the end, on failure and
 * on Ctrl-C. Markdown goes to stdout, JSON to results/, charts to docs/img/. Exits 1 only when a
 * cell failed its own checks (wrong row count, a background error).
 */
export async function runBench(
  script: BenchScript,
  title: string,
  sections: readonly Section[],
  env: Env = process.env,
): Promise<void> {
  const knobs = readKnobs(scriptEnv(script, env));
  const progress = new Progress();
  const command = commandLine(env, script);
  if (knobs.repeats < 5) {
    progress.note(
      `note: LOOM_BENCH_REPEATS=${knobs.repeats}: PERFORMANCE.md asks for at least 5 repeats; these figures are a smoke run`,
    );
  }
  if (knobs.batches !== undefined) {
    progress.note(
      'note: LOOM_BENCH_BATCHES is reserved for the coalescing store (P2), which is not built yet: ignored',
    );
  }
  const tmpDir = mkdtempSync(join(tmpdir(), 'loom-bench-'));
  let pg: PgTarget | string = 'not asked for (LOOM_BENCH_BACKENDS has no postgres)';
  const cleanup = async () => {
    if (typeof pg !== 'string') await dropPostgres(pg).catch(() => undefined);
    rmSync(tmpDir, { recursive: true, force: true });
  };
  const interrupted = () => {
    progress.note('interrupted: dropping the throwaway schema and temporary files');
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  let failed = false;
  const summary: string[] = [];
  try {
    if (knobs.backends.includes('postgres')) {
      pg = await reachPostgres(knobs.pgUrl);
      if (typeof pg === 'string') {
        progress.note(
          `postgres: cannot reach ${redact(knobs.pgUrl)} (${pg}): skipping every Postgres cell`,
        );
      } else {
        progress.note(`postgres: ${pg.version}, throwaway schema ${pg.schema}`);
      }
    }
    const before = readCpuJiffies();
    await sleep(1000);
    const after = readCpuJiffies();
    const busy =
      before === undefined || after === undefined ? null : busyShareBetween(before, after);
    const machine = describeMachine(typeof pg === 'string' ? null : pg.version, busy);
    const startedAt = new Date();
    const context: RunContext = {
      knobs,
      command,
      commandFor: (section) => commandLine({ ...env, LOOM_BENCH_SECTIONS: section }, script),
      progress,
      tmpDir,
      pg,
      chart: (fileName, svg) => {
        mkdirSync(chartsDir, { recursive: true });
        writeFileSync(join(chartsDir, fileName), svg);
        return `img/${fileName}`;
      },
    };
    process.stdout.write(
      `# ${title}\n\n\`\`\`sh\n${command}\n\`\`\`\n\n${machineMarkdown(machine, startedAt.toISOString())}\n`,
    );
    if (typeof pg === 'string' && knobs.backends.includes('postgres')) {
      process.stdout.write(
        `- Postgres cells skipped: cannot reach ${redact(knobs.pgUrl)} (${pg})\n`,
      );
    }
    const reports: SectionReport[] = [];
    for (const section of sections) {
      const report = await section(context);
      progress.clear();
      reports.push(report);
      process.stdout.write(`\n${report.markdown}\n`);
      summary.push(...(report.summary ?? []));
    }
    writeResults(script, command, startedAt, machine, knobs, reports);
  } catch (error) {
    failed = true;
    progress.clear();
    process.stderr.write(`\nbench failed: ${(error as Error).stack ?? String(error)}\n`);
  } finally {
    progress.clear();
    await cleanup();
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
  if (!failed && summary.length > 0) process.stdout.write(`\n${summary.join('\n')}\n`);
  process.exitCode = failed ? 1 : 0;
}

/** The environment a script reads its knobs from: the user's, over the script's own defaults. */
function scriptEnv(script: BenchScript, env: Env): Env {
  if (script === 'bench:lease') return leaseEnv(env);
  if (script === 'bench:agents') return agentEnv(env);
  if (script === 'bench:peers') return peersEnv(env);
  return env;
}

function writeResults(
  script: string,
  command: string,
  startedAt: Date,
  machine: Machine,
  knobs: Knobs,
  sections: readonly SectionReport[],
): void {
  mkdirSync(resultsDir, { recursive: true });
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const file = join(resultsDir, `${stamp}-${script.replace(':', '-')}.json`);
  const run = {
    suite: script,
    command,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine,
    knobs: { ...knobs, pgUrl: redact(knobs.pgUrl) },
    sections: sections.map(({ markdown: _markdown, ...rest }) => rest),
  };
  writeFileSync(file, `${JSON.stringify(run, null, 2)}\n`);
  process.stderr.write(`results: ${file}\n`);
}

/** A connection string without its password, for logs and files. */
export function redact(url: string): string {
  return url.replace(/(\/\/[^:/@]+):[^@]*@/, '$1:***@');
}
