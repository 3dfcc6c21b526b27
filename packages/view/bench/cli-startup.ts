// What a `loom` call costs before it does its work (issue 33): wall time and ES modules loaded of
// `loom --help`, `loom runs` and `loom show <id>` on a SQLite file with a few runs, this package's
// built bin against a baseline bin, interleaved (A B, B A, …), medians and the paired ratio.
// Run: pnpm --filter @loom/view exec tsx bench/cli-startup.ts
//   LOOM_CLI_BASELINE: the baseline's dist/bin.js (e.g. another worktree's; unset: this bin alone)
//   CLI_ROUNDS: rounds (default 15)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSqlite } from '@loom/event-runtime/sqlite';
import { populate, runtimeOn } from '../test/fixture.js';

const rounds = Number(process.env.CLI_ROUNDS ?? 15);
const bins: Record<string, string> = {
  ...(process.env.LOOM_CLI_BASELINE === undefined ? {} : { before: process.env.LOOM_CLI_BASELINE }),
  after: fileURLToPath(new URL('../dist/bin.js', import.meta.url)),
};
const recorder = fileURLToPath(new URL('../test/load-recorder.mjs', import.meta.url));

const dir = mkdtempSync(join(tmpdir(), 'loom-cli-startup-'));
const path = join(dir, 'loom.db');
const backend = openSqlite({ path, migrate: true });
const running = runtimeOn(backend);
await populate(running, backend);
await running.flows.shutdown();
await backend.close();
const db = `sqlite:${path}`;
const commands: Record<string, string[]> = {
  help: ['--help'],
  runs: ['runs', '--db', db],
  show: ['show', 'order-7', '--db', db],
};

function run(bin: string, args: readonly string[]): number {
  const started = process.hrtime.bigint();
  const out = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (out.status !== 0)
    throw new Error(`${bin} ${args.join(' ')}: exit ${out.status}\n${out.stderr}`);
  return ms;
}

function modulesLoaded(bin: string, args: readonly string[]): number {
  const record = join(dir, 'loaded.txt');
  rmSync(record, { force: true });
  const out = spawnSync(process.execPath, ['--import', recorder, bin, ...args], {
    env: { ...process.env, LOOM_LOAD_RECORD: record },
  });
  if (out.status !== 0) throw new Error(`${bin} ${args.join(' ')}: exit ${out.status}`);
  return new Set(readFileSync(record, 'utf8').split('\n').filter(Boolean)).size;
}

/** The share of both cores busy (all processes) between two reads of /proc/stat. */
function cpuTimes(): { work: number; all: number } {
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0] = (
    readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? ''
  )
    .split(/\s+/)
    .slice(1, 6)
    .map(Number);
  return { work: user + nice + system, all: user + nice + system + idle + iowait };
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? 0)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};

const variants = Object.keys(bins);
const times = new Map<string, number[]>();
const cpu0 = cpuTimes();
for (let round = 0; round < rounds; round++) {
  for (const [name, args] of Object.entries(commands)) {
    // The order rotates every round, so neither variant always runs first.
    const order = round % 2 === 0 ? variants : [...variants].reverse();
    for (const variant of order) {
      const key = `${name} ${variant}`;
      times.set(key, [...(times.get(key) ?? []), run(bins[variant] ?? '', args)]);
    }
  }
}
const cpu1 = cpuTimes();
const busy = (100 * (cpu1.work - cpu0.work)) / (cpu1.all - cpu0.all);

console.log(
  `${rounds} rounds, ${new Date().toISOString()}; both cores ${busy.toFixed(0)} % busy meanwhile`,
);
console.log('| command | variant | modules | median ms (min..max) | ÷ before, paired |');
console.log('| --- | --- | --- | --- | --- |');
for (const [name, args] of Object.entries(commands)) {
  for (const variant of variants) {
    const ms = times.get(`${name} ${variant}`) ?? [];
    const before = times.get(`${name} before`);
    const ratio =
      variant === 'before' || before === undefined
        ? '–'
        : `${median(ms.map((t, i) => t / (before[i] ?? t))).toFixed(2)}×`;
    const range = `${Math.min(...ms).toFixed(0)}..${Math.max(...ms).toFixed(0)}`;
    console.log(
      `| ${name} | ${variant} | ${modulesLoaded(bins[variant] ?? '', args)} | ${median(ms).toFixed(0)} (${range}) | ${ratio} |`,
    );
  }
}
rmSync(dir, { recursive: true, force: true });
process.exit(0);
