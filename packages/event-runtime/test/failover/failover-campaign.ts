// The failover campaign (issue 32): two worker processes on a multi-host URL drive executions
// of a flow with a plain step, a transactional one, a timer, a signal and a non-idempotent tool
// (failover-worker.ts) while the primary is killed under them. The kill is the caller's: the
// test SIGKILLs a pg_auto_failover primary (failover-cluster.ts), the `campaign:failover` CLI
// runs the operator's own command. Then: every execution ended once with its output, each
// transaction's row is there once, no tool ran twice (a repeat asked a person), every log
// verifies, no worker crashed, and the times from the kill to the first commit after it and to
// the last execution ending. The checks of the log reuse the kill campaign's inspector.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { spawnTestProcess, type TestProcess } from '../../src/testing.js';
import { openCrashBackend } from '../crash/crash-backend.js';
import { crashStoreEnv, openInspector } from '../crash/kill-campaign.js';

const workerFile = join(import.meta.dirname, 'failover-worker.ts');
const terminalTypes = ['execution.completed', 'execution.failed', 'execution.cancelled'];
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A worker lives through the campaign: SIGKILLed if still alive this long after its start. */
const workerLifeMs = 900_000;

export interface FailoverCampaignOptions {
  /** Several hosts, `target_session_attrs=read-write`: what the workers get, what the checks read. */
  url: string;
  /**
   * What the workers get instead of `url` (a rehearsal of today's behaviour: one host, the
   * first primary's, which they can never leave).
   */
  workerUrl?: string;
  /** A schema of this run's own. */
  schema: string;
  execs: number;
  /** Executions each worker drives at once. */
  concurrency: number;
  /** A directory of this run's own (the effect, tool and question files). */
  directory: string;
  /** The kill comes once this many executions have ended. */
  killAfterEnded: number;
  /** Kills the primary; resolves with when (epoch ms). */
  kill: () => Promise<number>;
  /** From the kill: deadline for every execution to end. */
  settleDeadlineMs: number;
  /** Called with the workers' node ids once both are ready. */
  onWorkersReady?: (nodeIds: string[]) => void;
  /** Called once the kill landed. */
  onKilled?: (atMs: number) => void;
  log?: (line: string) => void;
}

export interface FailoverReport {
  execs: number;
  events: number;
  /** Executions ended before the kill. */
  endedBeforeKill: number;
  /** Without a terminal event. */
  lost: string[];
  duplicateTerminals: string[];
  /** Ended otherwise than completed with 2 × index + 1. */
  wrongOutputs: string[];
  /** A step with two `step.completed`. */
  duplicateCompletions: string[];
  /** Transactional rows beyond one per execution, and executions without theirs. */
  reapplied: number;
  sideMissing: string[];
  /** Runs of the non-idempotent tool beyond the first, of any execution: re-runs without a person. */
  toolReruns: number;
  /** Executions whose tool never ran and whose run never asked a person either. */
  toolMissing: string[];
  /** Executions whose tool call found an earlier run and asked a person instead of repeating it. */
  asked: number;
  /** Plain-step runs beyond the first (at-least-once: allowed, reported). */
  plainReruns: number;
  verifyFailures: string[];
  /** Per worker: the store errors its runtime reported (`onError`) and how it ended. */
  workers: Array<{ nodeId: string; storeErrors: number; exit: string }>;
  /** A worker that exited otherwise than with code 0, or did not stop within 20 s once told to. */
  crashedWorkers: string[];
  /** Kill → the first event appended after it seen on the server that took writes. */
  firstCommitAfterKillMs: number | null;
  /** Kill → the last execution ending. */
  lastEndedAfterKillMs: number | null;
  wallMs: number;
}

/** `postgres://u@h1:p1,h2:p2/db?…` → one URL per host (query kept, target_session_attrs dropped). */
export function hostUrls(url: string): string[] {
  const match = /^(postgres(?:ql)?:\/\/)(?:([^@/]*)@)?([^/?]+)(\/[^?]*)?(\?.*)?$/.exec(url);
  if (match === null) throw new Error(`not a postgres:// URL: ${url}`);
  const [, scheme, auth, hosts, path, query] = match;
  const params = new URLSearchParams((query ?? '').slice(1));
  params.delete('target_session_attrs');
  const rest = `${path ?? ''}${params.size > 0 ? `?${params}` : ''}`;
  return (hosts as string)
    .split(',')
    .map((host) => `${scheme}${auth === undefined ? '' : `${auth}@`}${host}${rest}`);
}

/** The single-host URL of the host that takes writes now, or undefined when none does. */
export async function writableUrl(url: string): Promise<string | undefined> {
  for (const candidate of hostUrls(url)) {
    const client = new pg.Client({ connectionString: candidate, connectionTimeoutMillis: 1_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query('SELECT pg_is_in_recovery() AS standby');
      if (rows[0]?.standby === false) return candidate;
    } catch {
      // Down, or not there yet.
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  return undefined;
}

async function waitForWritable(url: string, deadlineMs: number): Promise<string> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const found = await writableUrl(url);
    if (found !== undefined) return found;
    if (Date.now() > until)
      throw new Error(`no host of ${hostUrls(url).join(' ')} took writes within ${deadlineMs} ms`);
    await pause(100);
  }
}

/** Per host: whether an event stamped at or after `atMs` is there (a standby answers reads too). */
async function commitAfter(url: string, schema: string, atMs: number): Promise<boolean> {
  for (const candidate of hostUrls(url)) {
    const client = new pg.Client({ connectionString: candidate, connectionTimeoutMillis: 500 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query(
        `SELECT EXISTS (SELECT 1 FROM "${schema}".events WHERE at >= $1) AS found`,
        [atMs],
      );
      if (rows[0]?.found === true) return true;
    } catch {
      // Down, or in the middle of its promotion.
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  return false;
}

export async function runFailoverCampaign(
  options: FailoverCampaignOptions,
): Promise<FailoverReport> {
  const began = Date.now();
  const log = options.log ?? (() => undefined);
  mkdirSync(options.directory, { recursive: true });
  for (const file of ['effects.log', 'tool-runs.log', 'asks.log'])
    writeFileSync(join(options.directory, file), '');
  // Migrated, with the side table, on the host that takes writes now, before any worker opens it.
  const setupUrl = await waitForWritable(options.url, 10_000);
  await (
    await openCrashBackend(
      crashStoreEnv('postgres', options.directory, setupUrl, options.schema),
      true,
    )
  ).close();

  const workerCount = 2;
  const workers: TestProcess[] = [];
  for (let slot = 0; slot < workerCount; slot++) {
    workers.push(
      spawnTestProcess(workerFile, {
        env: {
          ...crashStoreEnv(
            'postgres',
            options.directory,
            options.workerUrl ?? options.url,
            options.schema,
          ),
          LOOM_CRASH_PREPARED: '1',
          LOOM_FAILOVER_EXECS: String(options.execs),
          LOOM_FAILOVER_WORKERS: String(workerCount),
          LOOM_FAILOVER_SLOT: String(slot),
          LOOM_FAILOVER_CONCURRENCY: String(options.concurrency),
          LOOM_FAILOVER_DIR: options.directory,
        },
        stdin: true,
        deadlineMs: workerLifeMs,
      }),
    );
  }
  const nodeIds = await Promise.all(
    workers.map(async (worker) => (await worker.line('ready ')).slice('ready '.length)),
  );
  log(`failover campaign: workers ready (${nodeIds.join(', ')})`);
  options.onWorkersReady?.(nodeIds);
  const crashed = () =>
    workers.flatMap((worker, slot) =>
      worker.exited() ? [`worker ${slot}:\n${worker.output()}`] : [],
    );

  let inspector = openInspector(
    crashStoreEnv('postgres', options.directory, setupUrl, options.schema),
  );
  try {
    // Until enough executions ended: then the kill lands while the rest are in flight.
    for (const until = Date.now() + options.settleDeadlineMs; ; ) {
      const ended = await inspector.terminalCount();
      if (ended >= options.killAfterEnded) break;
      const dead = crashed();
      if (dead.length > 0) throw new Error(`a worker exited before the kill: ${dead.join('\n')}`);
      if (Date.now() > until)
        throw new Error(
          `only ${ended} of ${options.killAfterEnded} executions ended before the kill was due`,
        );
      await pause(50);
    }
  } finally {
    await inspector.close();
  }
  const endedBeforeKill = await (async () => {
    const look = openInspector(
      crashStoreEnv('postgres', options.directory, setupUrl, options.schema),
    );
    try {
      return await look.terminalCount();
    } finally {
      await look.close();
    }
  })();
  const killAtMs = await options.kill();
  log(
    `failover campaign: primary killed at ${killAtMs}, ${endedBeforeKill} of ${options.execs} ended`,
  );
  options.onKilled?.(killAtMs);

  // The first commit after the kill, seen on whichever host has it.
  let firstCommitAfterKillMs: number | null = null;
  const settleUntil = killAtMs + options.settleDeadlineMs;
  while (firstCommitAfterKillMs === null && Date.now() < settleUntil) {
    if (await commitAfter(options.url, options.schema, killAtMs))
      firstCommitAfterKillMs = Date.now() - killAtMs;
    else await pause(50);
  }
  log(`failover campaign: first commit after the kill at +${firstCommitAfterKillMs} ms`);
  const newUrl = await waitForWritable(options.url, Math.max(1_000, settleUntil - Date.now()));
  inspector = openInspector(crashStoreEnv('postgres', options.directory, newUrl, options.schema));
  let lastEndedAfterKillMs: number | null = null;
  try {
    for (;;) {
      const ended = await inspector.terminalCount().catch(() => -1);
      if (ended >= options.execs) {
        lastEndedAfterKillMs = Date.now() - killAtMs;
        break;
      }
      const dead = crashed();
      if (dead.length > 0)
        throw new Error(`a worker exited by itself after the kill: ${dead.join('\n')}`);
      if (Date.now() > settleUntil) {
        log(
          `failover campaign: ${options.execs - ended} executions not ended ${options.settleDeadlineMs} ms after the kill`,
        );
        break;
      }
      await pause(100);
    }

    // Stop the workers; a worker that does not end by itself within 20 s is a failure.
    for (const worker of workers) worker.child.stdin?.end();
    const report: FailoverReport = {
      execs: options.execs,
      events: await inspector.eventCount(),
      endedBeforeKill,
      lost: [],
      duplicateTerminals: [],
      wrongOutputs: [],
      duplicateCompletions: [],
      reapplied: 0,
      sideMissing: [],
      toolReruns: 0,
      toolMissing: [],
      asked: 0,
      plainReruns: 0,
      verifyFailures: [],
      workers: [],
      crashedWorkers: [],
      firstCommitAfterKillMs,
      lastEndedAfterKillMs,
      wallMs: 0,
    };
    const ends = await Promise.all(
      workers.map((worker) =>
        worker.ended(20_000).catch((error: Error) => ({
          code: null,
          signal: null,
          stdout: '',
          output: error.message,
        })),
      ),
    );
    for (const [slot, end] of ends.entries()) {
      const done = /^done (\d+)$/m.exec(end.stdout);
      report.workers.push({
        nodeId: nodeIds[slot] as string,
        storeErrors: done === null ? -1 : Number(done[1]),
        exit: end.signal ?? String(end.code),
      });
      if (end.code !== 0 || done === null)
        report.crashedWorkers.push(
          `worker ${slot} (exit ${end.signal ?? end.code}):\n${end.output.slice(-4_000)}`,
        );
    }

    const count = (file: string, key: (line: string) => string) => {
      const counts = new Map<string, number>();
      for (const line of readFileSync(join(options.directory, file), 'utf8').split('\n')) {
        if (line.length > 0) counts.set(key(line), (counts.get(key(line)) ?? 0) + 1);
      }
      return counts;
    };
    const plainRuns = count('effects.log', (line) => line);
    const toolRuns = count('tool-runs.log', (line) => line.split(' ')[0] as string);
    const asks = count('asks.log', (line) => line);
    report.asked = asks.size;
    for (const runs of plainRuns.values()) report.plainReruns += runs - 1;
    const side = await inspector.sideRows();
    const reader = await inspector.reader();
    try {
      for (let index = 0; index < options.execs; index++) {
        const id = `failover-${index}`;
        const events = await reader.read(id);
        const terminal = events.filter((event) => terminalTypes.includes(event.type));
        if (terminal.length === 0) report.lost.push(id);
        if (terminal.length > 1) report.duplicateTerminals.push(id);
        const end = terminal[0];
        if (
          end !== undefined &&
          (end.type !== 'execution.completed' ||
            (end.payload as { output: unknown }).output !== index * 2 + 1)
        )
          report.wrongOutputs.push(id);
        const completed = new Map<number, number>();
        for (const event of events) {
          if (event.type !== 'step.completed') continue;
          const step = (event.payload as { index: number }).index;
          if (completed.has(step)) report.duplicateCompletions.push(`${id}/${step}`);
          completed.set(step, step);
        }
        const rows = side.get(id) ?? 0;
        if (rows === 0) report.sideMissing.push(id);
        else report.reapplied += rows - 1;
        // The tool is the flow's fifth operation: step a, the transaction, the timer, the signal.
        const toolKey = [...toolRuns.keys()].find((key) => key.startsWith(`${id}/`));
        const runs = toolKey === undefined ? 0 : (toolRuns.get(toolKey) as number);
        report.toolReruns += Math.max(0, runs - 1);
        if (runs === 0 && !asks.has(id) && terminal.length > 0) report.toolMissing.push(id);
        if (!(await reader.verify(id)).ok) report.verifyFailures.push(id);
      }
    } finally {
      await reader.close();
    }
    report.wallMs = Date.now() - began;
    return report;
  } finally {
    await inspector.close();
    for (const worker of workers) if (!worker.exited()) await worker.kill('SIGKILL');
  }
}

/** The failures of a report, one line each; empty when it passed. */
export function failuresOf(report: FailoverReport): string[] {
  const failures: string[] = [];
  const list = (what: string, ids: readonly string[]) => {
    if (ids.length > 0) failures.push(`${what}: ${ids.length} (${ids.slice(0, 5).join(', ')})`);
  };
  list('acknowledged executions lost (no terminal event)', report.lost);
  list('executions ended twice', report.duplicateTerminals);
  list('wrong outputs', report.wrongOutputs);
  list('steps completed twice', report.duplicateCompletions);
  if (report.reapplied > 0) failures.push(`exactly-once rows duplicated: ${report.reapplied}`);
  list('exactly-once rows missing', report.sideMissing);
  if (report.toolReruns > 0)
    failures.push(`non-idempotent tool re-run without a person: ${report.toolReruns}`);
  list('tool neither run nor asked about', report.toolMissing);
  list('logs that do not verify', report.verifyFailures);
  for (const crashed of report.crashedWorkers) failures.push(`a worker crashed: ${crashed}`);
  if (report.lastEndedAfterKillMs === null)
    failures.push('not every execution ended within the deadline after the kill');
  return failures;
}

/** One line for a report. */
export function summarizeFailover(report: FailoverReport): string {
  return (
    `failover campaign: ${report.execs} executions (${report.endedBeforeKill} ended before the kill), ` +
    `${report.events} events; lost ${report.lost.length}, ended twice ${report.duplicateTerminals.length}, ` +
    `wrong outputs ${report.wrongOutputs.length}, steps completed twice ${report.duplicateCompletions.length}, ` +
    `exactly-once rows duplicated ${report.reapplied} / missing ${report.sideMissing.length}, ` +
    `tool re-runs without a person ${report.toolReruns}, tool calls that asked a person ${report.asked}, ` +
    `plain-step re-runs ${report.plainReruns}, verify failures ${report.verifyFailures.length}, ` +
    `workers that crashed or did not stop ${report.crashedWorkers.length}; store errors per worker ` +
    `${report.workers.map((worker) => worker.storeErrors).join('/')}; kill → first commit ` +
    `${report.firstCommitAfterKillMs ?? 'never'} ms, kill → last execution ended ` +
    `${report.lastEndedAfterKillMs ?? 'never'} ms; ${(report.wallMs / 1000).toFixed(1)} s`
  );
}
