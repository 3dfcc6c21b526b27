// The kill -9 campaign (issue 14): several worker processes share one log (a SQLite file or a
// Postgres schema) and drive executions of a flow with two plain steps around a transactional
// one; a seeded-random worker is SIGKILLed at seeded-random moments and restarted after a
// seeded-random delay. At the end every execution's log is checked, effect re-runs are counted
// against the work in flight at each kill, and for each kill the time to recover is measured:
// from the SIGKILL until every execution the killed worker owned has appended its next event
// (the kernel stamps `at` before it appends, so an event of the dead process is always older
// than the kill). Run by `kill-campaign.test.ts` (a small budget, in CI) and by
// `pnpm --filter @loom/event-runtime campaign:kill` (the full campaign, on demand).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { EventStore } from '../../src/index.js';
import { PostgresEventStore } from '../../src/postgres.js';
import { SqliteEventStore } from '../../src/sqlite.js';
import { spawnTestProcess, type TestProcess } from '../../src/testing.js';
import { openCrashBackend } from './crash-backend.js';
import { seededRandom } from './crash-harness.js';

const workerFile = join(import.meta.dirname, 'kill-campaign-worker.ts');
const terminalTypes = ['execution.completed', 'execution.failed', 'execution.cancelled'];
/**
 * A campaign worker lives through the whole campaign, which the CLI runs for minutes: SIGKILLed
 * if still alive an hour after its start, past any campaign.
 */
const workerLifeMs = 3_600_000;

export interface CampaignOptions {
  backend: 'sqlite' | 'postgres';
  execs: number;
  workers: number;
  /** SIGKILLs wanted; fewer land when the executions finish first. */
  kills: number;
  seed: number;
  /** Executions each worker drives at once. */
  concurrency: number;
  /** A kill every `killGapMs[0]`..`killGapMs[1]` ms. */
  killGapMs: [number, number];
  /** The killed worker is restarted `restartDelayMs[0]`..`[1]` ms after it died. */
  restartDelayMs: [number, number];
  /** A directory of this run's own (the SQLite file, the effects file). */
  directory: string;
  /** Postgres: the server and a schema of this run's own. */
  pgUrl?: string;
  schema?: string;
  /**
   * Every worker starts with `handOffStarts` (and polls timers every 50 ms): its starts are
   * written due and run by whichever worker's poll takes them first.
   */
  handOffStarts?: boolean;
  /** Deadline for all executions to end once the kills are over. */
  settleDeadlineMs?: number;
  /** Called once every worker has booted (said it is ready), before the first kill. */
  onWorkersReady?: () => void;
  /**
   * Called once the kills are over and the killed workers are back, with the kills that landed:
   * a test can take the kills and the settling as two steps, each within its timeout.
   */
  onKillsDone?: (kills: number) => void;
  log?: (line: string) => void;
}

export interface KillRecord {
  slot: number;
  atMs: number;
  /**
   * Executions the killed worker held a lease on, or had started lazily and not leased yet (the
   * index's `started_by`, ADR 0048), and had not ended (as far as the look saw).
   */
  owned: number;
  /**
   * From the SIGKILL to the last of them appending its next event; 0 when there was nothing to
   * recover (it owned none, or all of them ended at the kill); `null` when one of them never
   * appended an event after the kill (`notRecovered`): no time, kept out of the percentiles.
   */
  recoverMs: number | null;
  /** The owned execution that took longest. */
  slowest?: string;
  /**
   * Owned executions whose last event, their terminal one, was stamped before the kill: that
   * write was in flight at the kill and landed after the look at what the worker owned (a
   * Postgres server finishes a statement whose client died; a survivor that had taken the
   * execution over ends it). Nothing was left to recover: not a time.
   */
  endedAtKill: string[];
  /**
   * Owned executions with no event before the kill: the killed worker held an eager start's lease
   * but had not written `execution.started` yet, so there was nothing in the log to recover; the
   * start is its caller's to repeat (the restarted worker does, in its own time). Not a time.
   */
  notStarted: string[];
  /** Owned executions with no event after the kill that did not end before it: not recovered within the run. */
  notRecovered: string[];
}

/**
 * The recovery of one kill, from when each owned execution first appended at or after the kill
 * (`firstEventAt`, absent when it never did), when each ended (`endedAt`, the newest terminal
 * event's `at`, absent when it never ended) and when each started (`startedAt`, its first event's
 * `at`; absent or at or after the kill: not started when the worker died).
 */
export function recoveryOf(
  kill: { slot: number; atMs: number; owned: readonly string[] },
  firstEventAt: ReadonlyMap<string, number>,
  endedAt: ReadonlyMap<string, number>,
  startedAt: ReadonlyMap<string, number> = new Map(kill.owned.map((id) => [id, 0])),
): KillRecord {
  let last = kill.atMs;
  let slowest: string | undefined;
  const endedAtKill: string[] = [];
  const notStarted: string[] = [];
  const notRecovered: string[] = [];
  for (const id of kill.owned) {
    if ((startedAt.get(id) ?? Number.POSITIVE_INFINITY) >= kill.atMs) {
      notStarted.push(id);
      continue;
    }
    const at = firstEventAt.get(id);
    if (at === undefined) {
      const ended = endedAt.get(id);
      if (ended !== undefined && ended < kill.atMs) endedAtKill.push(id);
      else notRecovered.push(id);
      continue;
    }
    if (at >= last) {
      last = at;
      slowest = id;
    }
  }
  return {
    slot: kill.slot,
    atMs: kill.atMs,
    owned: kill.owned.length,
    recoverMs: notRecovered.length > 0 ? null : last - kill.atMs,
    ...(slowest === undefined ? {} : { slowest }),
    endedAtKill,
    notStarted,
    notRecovered,
  };
}

/** The recovery times to take percentiles of: kills that had something to recover, and did. */
export function recoveryTimes(kills: readonly KillRecord[]): number[] {
  return kills.flatMap((kill) =>
    kill.recoverMs !== null && kill.owned > kill.endedAtKill.length + kill.notStarted.length
      ? [kill.recoverMs]
      : [],
  );
}

export interface CampaignReport {
  backend: string;
  seed: number;
  execs: number;
  workers: number;
  kills: KillRecord[];
  /** Executions without a terminal event. */
  lost: string[];
  /** Executions with more than one terminal event. */
  duplicateTerminals: string[];
  /** Ended otherwise than completed with 2 × index + 1. */
  wrongOutputs: string[];
  /** A step with two `step.completed`. */
  duplicateCompletions: string[];
  /** Plain effects that never ran. */
  missingEffects: number;
  /** Plain effect runs beyond the first. */
  reruns: number;
  /** The sum over kills of the executions the killed worker owned: one step in flight each. */
  rerunBound: number;
  /** Transactional side rows beyond one per execution. */
  reapplied: number;
  /** Executions without their side row. */
  sideMissing: string[];
  verifyFailures: string[];
  events: number;
  /** Over the kills that had something to recover and recovered it within the run. */
  recoverP50Ms: number;
  recoverP99Ms: number;
  recoverMaxMs: number;
  /** Kills with an owned execution that never appended an event after the kill. */
  killsNotRecovered: number;
  /** Owned executions that ended by a write stamped before their kill (nothing to recover). */
  endedAtKill: number;
  /** Owned executions the killed worker had leased but not started (see KillRecord.notStarted). */
  notStartedAtKill: number;
  /** From spawning a worker to its `ready` (its boot recovery round done), median. */
  bootP50Ms: number;
  wallMs: number;
}

/** The nearest-rank percentile of `values` (0 when empty); every value must be finite. */
export function percentile(values: readonly number[], p: number): number {
  if (!values.every(Number.isFinite)) {
    throw new Error(`a percentile of non-finite values: ${values.join(', ')}`);
  }
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

/** Raw SQL behind the runtime's back: leases, event times, side rows. */
export interface Inspector {
  ownedBy(nodeId: string): Promise<string[]>;
  terminalCount(): Promise<number>;
  /** Per execution of `ids`: the `at` of its first event at or after `atMs`, if any. */
  firstEventFrom(ids: readonly string[], atMs: number): Promise<Map<string, number>>;
  /** Per execution: the newest terminal event's `at`, if it ended. */
  endedAt(ids: readonly string[]): Promise<Map<string, number>>;
  sideRows(): Promise<Map<string, number>>;
  eventCount(): Promise<number>;
  reader(): Promise<EventStore>;
  close(): Promise<void>;
}

function sqliteInspector(path: string): Inspector {
  const db = new Database(path, { readonly: true });
  db.pragma('busy_timeout = 5000');
  const list = (ids: readonly string[]) => ids.map(() => '?').join(',');
  return {
    ownedBy: async (nodeId) =>
      db
        .prepare(
          `SELECT execution_id FROM loom_leases WHERE owner = ?
           UNION SELECT x.execution_id FROM loom_executions x
            WHERE x.started_by = ? AND x.status = 'running'
              AND NOT EXISTS (SELECT 1 FROM loom_leases l WHERE l.execution_id = x.execution_id)`,
        )
        .all(nodeId, nodeId)
        .map((row) => (row as { execution_id: string }).execution_id),
    terminalCount: async () =>
      (
        db
          .prepare(`SELECT count(*) AS n FROM loom_events WHERE type IN (${list(terminalTypes)})`)
          .get(...terminalTypes) as { n: number }
      ).n,
    firstEventFrom: async (ids, atMs) =>
      ids.length === 0
        ? new Map()
        : new Map(
            db
              .prepare(
                `SELECT execution_id, min(at) AS at FROM loom_events
                  WHERE execution_id IN (${list(ids)}) AND at >= ? GROUP BY execution_id`,
              )
              .all(...ids, atMs)
              .map((row) => {
                const { execution_id, at } = row as { execution_id: string; at: number };
                return [execution_id, at];
              }),
          ),
    endedAt: async (ids) =>
      ids.length === 0
        ? new Map()
        : new Map(
            db
              .prepare(
                `SELECT execution_id, max(at) AS at FROM loom_events
                  WHERE execution_id IN (${list(ids)}) AND type IN (${list(terminalTypes)})
                  GROUP BY execution_id`,
              )
              .all(...ids, ...terminalTypes)
              .map((row) => {
                const { execution_id, at } = row as { execution_id: string; at: number };
                return [execution_id, at];
              }),
          ),
    sideRows: async () =>
      new Map(
        db
          .prepare('SELECT execution_id, count(*) AS n FROM crash_side GROUP BY execution_id')
          .all()
          .map((row) => {
            const { execution_id, n } = row as { execution_id: string; n: number };
            return [execution_id, n];
          }),
      ),
    eventCount: async () =>
      (db.prepare('SELECT count(*) AS n FROM loom_events').get() as { n: number }).n,
    reader: async () => SqliteEventStore.open({ path, readOnly: true }),
    close: async () => {
      db.close();
    },
  };
}

function postgresInspector(url: string, schema: string): Inspector {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  // pg-pool's end() resolves once its clients are asked to end, before their sockets close; a
  // server that goes away in that window (the failover campaign stops its cluster right after)
  // sends 57P01 to a client whose pool still forwards it as 'error': without a listener that
  // crashes the test process after every check passed.
  pool.on('error', () => undefined);
  const s = `"${schema}"`;
  const pairs = async (sql: string, values: unknown[]) =>
    new Map(
      (await pool.query(sql, values)).rows.map(
        (row) => [row.execution_id as string, Number(row.v)] as const,
      ),
    );
  return {
    ownedBy: async (nodeId) =>
      (
        await pool.query(
          `SELECT execution_id FROM ${s}.leases WHERE owner = $1
           UNION SELECT x.execution_id FROM ${s}.executions x
            WHERE x.started_by = $1 AND x.status = 'running'
              AND NOT EXISTS (SELECT 1 FROM ${s}.leases l WHERE l.execution_id = x.execution_id)`,
          [nodeId],
        )
      ).rows.map((row) => row.execution_id as string),
    terminalCount: async () =>
      (
        await pool.query(`SELECT count(*)::int AS n FROM ${s}.events WHERE type = ANY($1)`, [
          terminalTypes,
        ])
      ).rows[0].n as number,
    firstEventFrom: (ids, atMs) =>
      pairs(
        `SELECT execution_id, min(at) AS v FROM ${s}.events
          WHERE execution_id = ANY($1) AND at >= $2 GROUP BY execution_id`,
        [ids, atMs],
      ),
    endedAt: (ids) =>
      pairs(
        `SELECT execution_id, max(at) AS v FROM ${s}.events
          WHERE execution_id = ANY($1) AND type = ANY($2) GROUP BY execution_id`,
        [ids, terminalTypes],
      ),
    sideRows: () =>
      pairs(`SELECT execution_id, count(*) AS v FROM ${s}.crash_side GROUP BY execution_id`, []),
    eventCount: async () =>
      (await pool.query(`SELECT count(*)::int AS n FROM ${s}.events`)).rows[0].n as number,
    reader: () => PostgresEventStore.open({ connectionString: url, schema, readOnly: true }),
    close: () => pool.end(),
  };
}

/** Opens the inspector of the log `env` names (as `openCrashBackend` reads it). */
export function openInspector(env: Record<string, string>): Inspector {
  return env.LOOM_CRASH_BACKEND === 'sqlite'
    ? sqliteInspector(env.LOOM_CRASH_DB as string)
    : postgresInspector(env.LOOM_CRASH_PG_URL as string, env.LOOM_CRASH_SCHEMA as string);
}

/** The environment that names a run's log, for the workers, the setup and the inspector. */
export function crashStoreEnv(
  backend: 'sqlite' | 'postgres',
  directory: string,
  pgUrl?: string,
  schema?: string,
): Record<string, string> {
  return backend === 'sqlite'
    ? { LOOM_CRASH_BACKEND: 'sqlite', LOOM_CRASH_DB: join(directory, 'crash.db') }
    : {
        LOOM_CRASH_BACKEND: 'postgres',
        LOOM_CRASH_PG_URL: pgUrl as string,
        LOOM_CRASH_SCHEMA: schema as string,
      };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Slot {
  index: number;
  worker: TestProcess;
  nodeId: string;
  /** False while dead or booting. */
  live: boolean;
  booting: Promise<void>;
}

interface PendingKill {
  slot: number;
  atMs: number;
  owned: string[];
}

export async function runKillCampaign(options: CampaignOptions): Promise<CampaignReport> {
  const began = Date.now();
  const log = options.log ?? (() => undefined);
  const random = seededRandom(options.seed);
  const between = ([low, high]: [number, number]) => low + Math.floor(random() * (high - low));
  mkdirSync(options.directory, { recursive: true });
  const effects = join(options.directory, 'effects.log');
  writeFileSync(effects, '');
  const storeEnv = crashStoreEnv(options.backend, options.directory, options.pgUrl, options.schema);
  // Migrated and side table created once, before any worker opens the log.
  await (await openCrashBackend({ ...storeEnv }, true)).close();
  const inspector = openInspector(storeEnv);

  const env = (slot: number): Record<string, string> => ({
    ...storeEnv,
    LOOM_CRASH_PREPARED: '1',
    LOOM_CRASH_EFFECTS: effects,
    LOOM_CAMPAIGN_EXECS: String(options.execs),
    LOOM_CAMPAIGN_WORKERS: String(options.workers),
    LOOM_CAMPAIGN_SLOT: String(slot),
    LOOM_CAMPAIGN_CONCURRENCY: String(options.concurrency),
    LOOM_CAMPAIGN_TRACE: join(options.directory, 'trace.log'),
    ...(options.handOffStarts === true ? { LOOM_CAMPAIGN_HAND_OFF: '1' } : {}),
  });
  const boots: number[] = [];
  const boot = (slot: Slot): Promise<void> => {
    const spawnedAt = Date.now();
    slot.worker = spawnTestProcess(workerFile, {
      env: env(slot.index),
      stdin: true,
      deadlineMs: workerLifeMs,
    });
    slot.booting = slot.worker.line('ready ').then((line) => {
      boots.push(Date.now() - spawnedAt);
      slot.nodeId = line.slice('ready '.length);
      slot.live = true;
    });
    return slot.booting;
  };
  const slots: Slot[] = [];
  for (let index = 0; index < options.workers; index++) {
    const slot = { index, live: false, nodeId: '' } as Slot;
    slots.push(slot);
    void boot(slot);
  }
  await Promise.all(slots.map((slot) => slot.booting));
  log(`${options.backend}: ${options.workers} workers ready`);
  options.onWorkersReady?.();

  const pending: PendingKill[] = [];
  const restarts: Promise<void>[] = [];
  for (let kill = 0; kill < options.kills; kill++) {
    await pause(between(options.killGapMs));
    // Every worker dead: the next kill waits for one to be back.
    for (const waitUntil = Date.now() + 30_000; !slots.some((slot) => slot.live); ) {
      if (Date.now() > waitUntil) throw new Error('no worker came back within 30 s');
      await pause(20);
    }
    if ((await inspector.terminalCount()) >= options.execs) break;
    const live = slots.filter((slot) => slot.live);
    const slot = live[Math.floor(random() * live.length)] as Slot;
    const before = await inspector.ownedBy(slot.nodeId);
    const atMs = Date.now();
    slot.live = false;
    slot.worker.child.kill('SIGKILL');
    const { signal, code } = await slot.worker.exit;
    if (signal !== 'SIGKILL')
      throw new Error(
        `worker ${slot.index} ended with ${code} before its kill:\n${slot.worker.output()}`,
      );
    const after = await inspector.ownedBy(slot.nodeId);
    const candidates = [...new Set([...before, ...after])];
    const ended = await inspector.endedAt(candidates);
    const owned = candidates.filter((id) => (ended.get(id) ?? Number.POSITIVE_INFINITY) >= atMs);
    pending.push({ slot: slot.index, atMs, owned });
    log(
      `${atMs} kill ${pending.length}: worker ${slot.index} ${slot.nodeId} owned ${owned.join(',')}`,
    );
    const delay = between(options.restartDelayMs);
    restarts.push(pause(delay).then(() => boot(slot)));
  }
  await Promise.all(restarts);
  options.onKillsDone?.(pending.length);
  const deadline = Date.now() + (options.settleDeadlineMs ?? 300_000);
  while ((await inspector.terminalCount()) < options.execs) {
    for (const slot of slots) {
      if (slot.worker.exited())
        throw new Error(`worker ${slot.index} exited by itself:\n${slot.worker.output()}`);
    }
    if (Date.now() > deadline)
      throw new Error(
        `${options.execs - (await inspector.terminalCount())} executions not ended by the deadline`,
      );
    await pause(100);
  }
  for (const slot of slots) slot.worker.child.stdin?.end();
  for (const slot of slots) {
    const { code } = await slot.worker.exit;
    if (code !== 0) throw new Error(`worker ${slot.index} exit ${code}:\n${slot.worker.output()}`);
  }

  // Time to recover, per kill.
  const kills: KillRecord[] = [];
  for (const kill of pending) {
    kills.push(
      recoveryOf(
        kill,
        await inspector.firstEventFrom(kill.owned, kill.atMs),
        await inspector.endedAt(kill.owned),
        await inspector.firstEventFrom(kill.owned, 0),
      ),
    );
  }

  // Every execution's log, the effects file, the side rows.
  const runs = new Map<string, number>();
  for (const line of readFileSync(effects, 'utf8').split('\n')) {
    if (line.length > 0) runs.set(line, (runs.get(line) ?? 0) + 1);
  }
  // A kill of a worker that owned nothing (or whose executions all ended at the kill) has
  // nothing to recover, and one not recovered within the run has no time: neither is a time.
  const recoverTimes = recoveryTimes(kills);
  const side = await inspector.sideRows();
  const reader = await inspector.reader();
  const report: CampaignReport = {
    backend: options.backend,
    seed: options.seed,
    execs: options.execs,
    workers: options.workers,
    kills,
    lost: [],
    duplicateTerminals: [],
    wrongOutputs: [],
    duplicateCompletions: [],
    missingEffects: 0,
    reruns: 0,
    rerunBound: kills.reduce((sum, kill) => sum + kill.owned, 0),
    reapplied: 0,
    sideMissing: [],
    verifyFailures: [],
    events: await inspector.eventCount(),
    recoverP50Ms: percentile(recoverTimes, 50),
    recoverP99Ms: percentile(recoverTimes, 99),
    recoverMaxMs: Math.max(0, ...recoverTimes),
    killsNotRecovered: kills.filter((kill) => kill.recoverMs === null).length,
    endedAtKill: kills.reduce((sum, kill) => sum + kill.endedAtKill.length, 0),
    notStartedAtKill: kills.reduce((sum, kill) => sum + kill.notStarted.length, 0),
    bootP50Ms: percentile(boots, 50),
    wallMs: 0,
  };
  for (let index = 0; index < options.execs; index++) {
    const id = `campaign-${index}`;
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
    const completed = new Set<number>();
    for (const event of events.filter((candidate) => candidate.type === 'step.completed')) {
      const step = (event.payload as { index: number }).index;
      if (completed.has(step)) report.duplicateCompletions.push(`${id}/${step}`);
      completed.add(step);
    }
    // Steps 0 and 2 are plain (their key is `<id>/<index>`), step 1 the transaction.
    for (const step of [0, 2]) {
      const count = runs.get(`${id}/${step}`) ?? 0;
      if (count === 0) report.missingEffects += 1;
      else report.reruns += count - 1;
    }
    const rows = side.get(id) ?? 0;
    if (rows === 0) report.sideMissing.push(id);
    else report.reapplied += rows - 1;
    if (!(await reader.verify(id)).ok) report.verifyFailures.push(id);
  }
  await reader.close();
  await inspector.close();
  report.wallMs = Date.now() - began;
  return report;
}

/** One line for a report. */
export function summarize(report: CampaignReport): string {
  return (
    `${report.backend}: ${report.execs} executions, ${report.workers} workers, ` +
    `${report.kills.length} kills, ${report.events} events; lost ${report.lost.length}, ` +
    `duplicate terminal events ${report.duplicateTerminals.length}, wrong outputs ` +
    `${report.wrongOutputs.length}, duplicate step.completed ${report.duplicateCompletions.length}, ` +
    `missing effects ${report.missingEffects}, verify failures ${report.verifyFailures.length}; ` +
    `at-least-once re-runs ${report.reruns} (bound ${report.rerunBound}); transactional steps ` +
    `re-applied ${report.reapplied}, side rows missing ${report.sideMissing.length}; time to ` +
    `recover p50 ${report.recoverP50Ms} ms, p99 ${report.recoverP99Ms} ms, max ` +
    `${report.recoverMaxMs} ms over ${recoveryTimes(report.kills).length} kills with work to recover ` +
    `(${report.killsNotRecovered} kills not recovered within the run, ${report.endedAtKill} ` +
    `owned executions ended by a write stamped before their kill, ${report.notStartedAtKill} ` +
    `leased but not started at their kill); a worker boots in ` +
    `${report.bootP50Ms} ms, median; ` +
    `${(report.wallMs / 1000).toFixed(1)} s`
  );
}
