import { readdirSync, readFileSync } from 'node:fs';

/**
 * `/proc/stat` counts in USER_HZ ticks, which Linux fixes at 100 per second for this file
 * whatever the kernel's internal HZ: one tick is 10 ms of one core.
 */
export const msPerJiffy = 10;

/** Whole-machine CPU counters from the aggregate `cpu` line of `/proc/stat`, in jiffies. */
export interface CpuJiffies {
  /** user + nice + system + irq + softirq: time some core spent running something. */
  busy: number;
  /** busy + idle + iowait + steal: all time the line accounts for. */
  total: number;
}

/**
 * Parses the aggregate `cpu` line (the first line) of `/proc/stat`. Guest time is already inside
 * user and nice, so it is not added again. Throws when the text has no aggregate line.
 */
export function parseProcStat(text: string): CpuJiffies {
  const line = text.split('\n').find((candidate) => /^cpu\s/.test(candidate));
  if (line === undefined) throw new Error('/proc/stat has no aggregate "cpu" line');
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  if (fields.length < 7 || fields.some((value) => !Number.isFinite(value))) {
    throw new Error(`/proc/stat "cpu" line has unexpected fields: ${line}`);
  }
  const [user, nice, system, idle, iowait, irq, softirq, steal = 0] = fields as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number?,
  ];
  const busy = user + nice + system + irq + softirq;
  return { busy, total: busy + idle + iowait + steal };
}

/** The machine's counters now, or undefined where there is no `/proc/stat` (not Linux). */
export function readCpuJiffies(): CpuJiffies | undefined {
  try {
    return parseProcStat(readFileSync('/proc/stat', 'utf8'));
  } catch {
    return undefined;
  }
}

/** Busy CPU milliseconds (all cores, all processes) between two samples. */
export function busyMsBetween(before: CpuJiffies, after: CpuJiffies): number {
  return (after.busy - before.busy) * msPerJiffy;
}

/** Fraction of all cores busy between two samples (0..1); 0 when no time passed. */
export function busyShareBetween(before: CpuJiffies, after: CpuJiffies): number {
  const total = after.total - before.total;
  return total <= 0 ? 0 : (after.busy - before.busy) / total;
}

/** One process's CPU from `/proc/<pid>/stat`: its command name and user + system jiffies. */
export interface ProcessJiffies {
  comm: string;
  jiffies: number;
}

/**
 * Parses `/proc/<pid>/stat`. The command name sits in parentheses and may itself contain
 * spaces or parentheses, so fields are counted from the last `)`: utime and stime are the
 * 14th and 15th fields of the line.
 */
export function parseProcessStat(text: string): ProcessJiffies {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open === -1 || close < open) throw new Error(`not a /proc/<pid>/stat line: ${text}`);
  const rest = text
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  // rest[0] is field 3 (state), so field n is rest[n - 3].
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) {
    throw new Error(`/proc/<pid>/stat has no utime/stime: ${text}`);
  }
  return { comm: text.slice(open + 1, close), jiffies: utime + stime };
}

/**
 * CPU jiffies of every process whose command name starts with `prefix` (e.g. the Postgres
 * server's processes), keyed by pid. Processes that vanish while being read are skipped.
 */
export function readProcessJiffies(prefix: string): Map<number, number> {
  const found = new Map<number, number>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return found;
  }
  for (const pid of pids) {
    try {
      const stat = parseProcessStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      if (stat.comm.startsWith(prefix)) found.set(Number(pid), stat.jiffies);
    } catch {
      // The process exited between readdir and read.
    }
  }
  return found;
}

/**
 * Busy milliseconds of a set of processes between two samples; a process that started in
 * between counts from zero, one that exited in between is lost (a pool's backends live on).
 */
export function processBusyMsBetween(
  before: ReadonlyMap<number, number>,
  after: ReadonlyMap<number, number>,
): number {
  let jiffies = 0;
  for (const [pid, now] of after) jiffies += now - (before.get(pid) ?? 0);
  return jiffies * msPerJiffy;
}
