import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import Database from 'better-sqlite3';

/** The machine a run measured, printed above the tables and stored in the JSON. */
export interface Machine {
  cpu: string;
  cores: number;
  ramGiB: number;
  node: string;
  postgres: string | null;
  sqlite: string;
  kernel: string;
  /** The commit measured, `+ uncommitted changes` when the work tree had any. */
  commit: string;
  /** Share of all cores busy during the second before the run started (other work on the box). */
  backgroundBusyShare: number | null;
}

function cpuModel(): string {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((candidate) => candidate.startsWith('model name'));
    if (line !== undefined) return line.split(':')[1]?.trim() ?? 'unknown';
  } catch {
    // Not Linux: fall back to what Node reports.
  }
  return cpus()[0]?.model ?? 'unknown';
}

function kernelRelease(): string {
  try {
    return readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim();
  } catch {
    return process.platform;
  }
}

function gitCommit(): string {
  try {
    const run = (args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();
    const commit = run(['rev-parse', '--short', 'HEAD']);
    return run(['status', '--porcelain']) === '' ? commit : `${commit} + uncommitted changes`;
  } catch {
    return 'unknown';
  }
}

function sqliteVersion(): string {
  const db = new Database(':memory:');
  try {
    return (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
  } finally {
    db.close();
  }
}

export function describeMachine(
  postgres: string | null,
  backgroundBusyShare: number | null,
): Machine {
  return {
    cpu: cpuModel(),
    cores: cpus().length,
    ramGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    postgres,
    sqlite: sqliteVersion(),
    kernel: kernelRelease(),
    commit: gitCommit(),
    backgroundBusyShare,
  };
}

/** One Markdown line per fact. */
export function machineMarkdown(machine: Machine, date: string): string {
  const busy =
    machine.backgroundBusyShare === null
      ? 'unknown'
      : `${Math.round(machine.backgroundBusyShare * 100)} % of all cores busy in the second before the run`;
  return [
    `- Date: ${date}`,
    `- CPU: ${machine.cores} × ${machine.cpu} (\`nproc\` = ${machine.cores}), RAM ${machine.ramGiB} GiB, Linux ${machine.kernel}`,
    `- Node ${machine.node}, SQLite ${machine.sqlite} (better-sqlite3), ${machine.postgres ?? 'PostgreSQL: not reached'}`,
    `- Code: ${machine.commit}`,
    `- Background load: ${busy}`,
  ].join('\n');
}
