// The worker kill campaign (issue 17): N `loom worker` processes (the built binary) share one
// Postgres schema and work one queue of multi-step `job` executions; a seeded-random worker is
// SIGKILLed every few seconds and restarted. At the end every execution's log is checked (one
// terminal event, the right output), the effects file gives the re-runs, bounded by the work the
// killed workers held, and every worker must drain on SIGTERM with exit code 0. Run by
// `worker-kill.test.ts` (a CI budget) and by `pnpm --filter @loom/view campaign:workers` (the full
// 2,000 executions). Shaped after @loom/event-runtime's test/crash/kill-campaign.ts.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRuntime, type WorkflowDefinition } from '@loom/workflow-runtime';
import { openPostgres } from '@loom/workflow-runtime/postgres';
import pg from 'pg';
import { type LoomWorker, parseDrained, spawnLoomWorker, workerFlows } from './loom-worker.js';

export const campaignQueue = 'jobs';
const terminalTypes = ['execution.completed', 'execution.failed', 'execution.cancelled'];
/** A fleet worker lives through the whole campaign, which the CLI runs for minutes: an hour. */
const workerLifeMs = 3_600_000;

export interface FleetOptions {
  pgUrl: string;
  /** A schema of this run's own (created here, not dropped). */
  schema: string;
  execs: number;
  workers: number;
  /** SIGKILLs wanted; fewer land when the executions finish first. */
  kills: number;
  seed: number;
  /**
   * A kill every `killGapMs[0]`..`[1]` ms, or sooner: kill k (from 1) also fires once k/(kills+1)
   * of the executions have ended, so the kills land while work is in flight however fast the
   * workers run (a quiet box finished 300 executions before the third of six timed kills).
   */
  killGapMs: [number, number];
  /** The killed worker is restarted `restartDelayMs[0]`..`[1]` ms after it died. */
  restartDelayMs: [number, number];
  /** `--lease-ttl`: how soon a killed worker's executions and claims are taken over. */
  leaseTtlMs: number;
  /** `--concurrency`: queue items each worker runs at once. */
  concurrency: number;
  /** How long each step's effect takes. */
  stepMs: number;
  /** A directory of this run's own (the effects file). */
  directory: string;
  /** Deadline for every execution to end once the kills are over. */
  settleDeadlineMs: number;
  /** Called once every worker has booted (said it is ready), before the first kill. */
  onWorkersReady?: () => void;
  /**
   * Called once the kills are over and the killed workers are back, with the kills that landed:
   * a test can take the kills and the settling as two steps, each within its timeout.
   */
  onKillsDone?: (kills: number) => void;
  log?: (line: string) => void;
}

export interface FleetKill {
  slot: number;
  atMs: number;
  /** Executions the killed worker held (lease or live queue claim) that had not ended. */
  held: number;
}

export interface FleetReport {
  execs: number;
  workers: number;
  kills: FleetKill[];
  /** Executions without a terminal event. */
  lost: string[];
  /** Executions with more than one terminal event. */
  duplicateTerminals: string[];
  /** Ended otherwise than completed with 2n + 1. */
  wrongOutputs: string[];
  /** Step effects (3 per execution) that never ran. */
  missingEffects: number;
  /** Effect runs beyond the first (at-least-once re-runs). */
  reruns: number;
  /** The sum over kills of the executions the killed worker held: one step in flight each. */
  rerunBound: number;
  /** Queue items not done at the end. */
  queueNotDone: number;
  /** Exit codes of the final SIGTERM drains (all 0 when healthy). */
  drainExitCodes: number[];
  wallMs: number;
  /** Executions ended per second, from the first spawn to the last terminal event. */
  execPerSec: number;
}

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32, as the kernel's crash harness). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Migrates `schema` and enqueues `execs` `job` items (`j<n>`, input `{ n }`) on the queue. */
export async function enqueueJobs(pgUrl: string, schema: string, execs: number): Promise<void> {
  const { job } = (await import(workerFlows)) as { job: WorkflowDefinition<{ n: number }, number> };
  const backend = await openPostgres({ connectionString: pgUrl, schema, migrate: true });
  const runtime = createRuntime({ backend, flows: [job], timerPollMs: 0, recoverEveryMs: 0 });
  try {
    for (let start = 0; start < execs; start += 50) {
      const batch = [];
      for (let n = start; n < Math.min(execs, start + 50); n++) {
        batch.push(runtime.enqueue(campaignQueue, job, { n }, { itemId: `j${n}` }));
      }
      await Promise.all(batch);
    }
  } finally {
    await runtime.shutdown();
  }
}

/** The `loom worker` arguments of a fleet member. */
export function workerArgs(
  pgUrl: string,
  schema: string,
  options: { leaseTtlMs: number; concurrency: number; drainTimeoutMs?: number },
): string[] {
  return [
    '--db',
    `${pgUrl}?schema=${schema}`,
    '--flows',
    workerFlows,
    '--queues',
    campaignQueue,
    '--lease-ttl',
    String(options.leaseTtlMs),
    '--concurrency',
    String(options.concurrency),
    '--poll',
    '100',
    '--drain-timeout',
    String(options.drainTimeoutMs ?? 10_000),
  ];
}

interface Slot {
  index: number;
  worker: LoomWorker;
  nodeId: string;
  live: boolean;
  booting: Promise<void>;
}

export async function runWorkerFleet(options: FleetOptions): Promise<FleetReport> {
  const began = Date.now();
  const log = options.log ?? (() => undefined);
  const random = seededRandom(options.seed);
  const between = ([low, high]: [number, number]) => low + Math.floor(random() * (high - low));
  mkdirSync(options.directory, { recursive: true });
  const effects = join(options.directory, 'effects.log');
  writeFileSync(effects, '');
  await enqueueJobs(options.pgUrl, options.schema, options.execs);
  log(`${options.execs} jobs enqueued`);
  const pool = new pg.Pool({ connectionString: options.pgUrl, max: 2 });
  const s = `"${options.schema}"`;
  const terminalCount = async () =>
    (
      await pool.query(`SELECT count(*)::int AS n FROM ${s}.events WHERE type = ANY($1)`, [
        terminalTypes,
      ])
    ).rows[0].n as number;
  /** Executions `nodeId` holds now: its leases and its live queue claims. */
  const heldBy = async (nodeId: string): Promise<string[]> => {
    const leases = await pool.query(`SELECT execution_id FROM ${s}.leases WHERE owner = $1`, [
      nodeId,
    ]);
    const claims = await pool.query(
      `SELECT item_id FROM ${s}.queue_items WHERE owner = $1 AND status = 'running'`,
      [nodeId],
    );
    return [
      ...leases.rows.map((row) => row.execution_id as string),
      ...claims.rows.map((row) => `queue:${campaignQueue}:${row.item_id as string}`),
    ];
  };
  const endedBefore = async (ids: string[], atMs: number): Promise<Set<string>> => {
    const rows = await pool.query(
      `SELECT DISTINCT execution_id FROM ${s}.events
        WHERE execution_id = ANY($1) AND type = ANY($2) AND at < $3`,
      [ids, terminalTypes, atMs],
    );
    return new Set(rows.rows.map((row) => row.execution_id as string));
  };

  const env = { LOOM_WORKER_EFFECTS: effects, LOOM_WORKER_STEP_MS: String(options.stepMs) };
  const args = workerArgs(options.pgUrl, options.schema, options);
  const boot = (slot: Slot): Promise<void> => {
    slot.worker = spawnLoomWorker(args, env, workerLifeMs);
    slot.booting = slot.worker.ready.then((nodeId) => {
      slot.nodeId = nodeId;
      slot.live = true;
    });
    return slot.booting;
  };
  const slots: Slot[] = [];
  try {
    for (let index = 0; index < options.workers; index++) {
      const slot = { index, live: false, nodeId: '' } as Slot;
      slots.push(slot);
      void boot(slot);
    }
    await Promise.all(slots.map((slot) => slot.booting));
    log(`${options.workers} workers ready`);
    options.onWorkersReady?.();

    const kills: FleetKill[] = [];
    const restarts: Promise<void>[] = [];
    for (let kill = 0; kill < options.kills; kill++) {
      const gapEnds = Date.now() + between(options.killGapMs);
      const share = Math.ceil((options.execs * (kill + 1)) / (options.kills + 1));
      while (Date.now() < gapEnds && (await terminalCount()) < share) await pause(25);
      for (const waitUntil = Date.now() + 30_000; !slots.some((slot) => slot.live); ) {
        if (Date.now() > waitUntil) throw new Error('no worker came back within 30 s');
        await pause(20);
      }
      if ((await terminalCount()) >= options.execs) break;
      const live = slots.filter((slot) => slot.live);
      const slot = live[Math.floor(random() * live.length)] as Slot;
      const before = await heldBy(slot.nodeId);
      const atMs = Date.now();
      slot.live = false;
      slot.worker.child.kill('SIGKILL');
      const { signal, code } = await slot.worker.exit;
      if (signal !== 'SIGKILL') {
        throw new Error(
          `worker ${slot.index} ended with ${code} before its kill:\n${slot.worker.output()}`,
        );
      }
      const candidates = [...new Set([...before, ...(await heldBy(slot.nodeId))])];
      const ended = await endedBefore(candidates, atMs);
      const held = candidates.filter((id) => !ended.has(id)).length;
      kills.push({ slot: slot.index, atMs, held });
      log(`kill ${kills.length}: worker ${slot.index} (${slot.nodeId}) held ${held}`);
      restarts.push(pause(between(options.restartDelayMs)).then(() => boot(slot)));
    }
    await Promise.all(restarts);
    options.onKillsDone?.(kills.length);
    const deadline = Date.now() + options.settleDeadlineMs;
    const queueNotDone = async () =>
      (
        await pool.query(
          `SELECT count(*)::int AS n FROM ${s}.queue_items WHERE queue = $1 AND status <> 'done'`,
          [campaignQueue],
        )
      ).rows[0].n as number;
    let lastEndMs = Date.now();
    for (;;) {
      for (const slot of slots) {
        if (slot.worker.exited()) {
          throw new Error(`worker ${slot.index} exited by itself:\n${slot.worker.output()}`);
        }
      }
      const ended = await terminalCount();
      if (ended >= options.execs) {
        lastEndMs = Date.now();
        if ((await queueNotDone()) === 0) break;
      }
      if (Date.now() > deadline) {
        throw new Error(
          `${options.execs - ended} executions (${await queueNotDone()} queue items) not done by the deadline`,
        );
      }
      await pause(100);
    }
    log(`all ${options.execs} ended; draining the workers`);

    // The final drains: SIGTERM, exit code 0.
    const drainExitCodes: number[] = [];
    for (const slot of slots) slot.worker.child.kill('SIGTERM');
    for (const slot of slots) {
      const { code } = await slot.worker.exit;
      drainExitCodes.push(code ?? -1);
      // A worker that exits 0 printed what its drain did.
      if (code === 0) parseDrained(drainedLine(slot.worker));
    }

    // Every execution's log and the effects file.
    const rows = await pool.query(
      `SELECT execution_id, type, payload FROM ${s}.events WHERE type = ANY($1)`,
      [terminalTypes],
    );
    const terminals = new Map<string, { type: string; payload: string }[]>();
    for (const row of rows.rows) {
      const list = terminals.get(row.execution_id) ?? [];
      list.push({ type: row.type, payload: row.payload });
      terminals.set(row.execution_id, list);
    }
    const runs = new Map<string, number>();
    for (const line of readFileSync(effects, 'utf8').split('\n')) {
      if (line.length > 0) runs.set(line, (runs.get(line) ?? 0) + 1);
    }
    const report: FleetReport = {
      execs: options.execs,
      workers: options.workers,
      kills,
      lost: [],
      duplicateTerminals: [],
      wrongOutputs: [],
      missingEffects: Math.max(0, 3 * options.execs - runs.size),
      reruns: [...runs.values()].reduce((sum, n) => sum + n - 1, 0),
      rerunBound: kills.reduce((sum, kill) => sum + kill.held, 0),
      queueNotDone: await queueNotDone(),
      drainExitCodes,
      wallMs: Date.now() - began,
      execPerSec: options.execs / ((lastEndMs - began) / 1000),
    };
    for (let n = 0; n < options.execs; n++) {
      const id = `queue:${campaignQueue}:j${n}`;
      const ends = terminals.get(id) ?? [];
      if (ends.length === 0) report.lost.push(id);
      if (ends.length > 1) report.duplicateTerminals.push(id);
      const [end] = ends;
      if (
        end !== undefined &&
        (end.type !== 'execution.completed' ||
          (JSON.parse(end.payload) as { output?: unknown }).output !== 2 * n + 1)
      ) {
        report.wrongOutputs.push(id);
      }
    }
    return report;
  } finally {
    for (const slot of slots) if (!slot.worker.exited()) slot.worker.child.kill('SIGKILL');
    await pool.end();
  }
}

/** The worker's `drained` line (it printed it before exiting 0). */
function drainedLine(worker: LoomWorker): string {
  const line = worker
    .output()
    .split('\n')
    .find((text) => text.includes(' drained: '));
  if (line === undefined) throw new Error(`no drained line:\n${worker.output()}`);
  return line;
}

/** One line per figure, for the test's log and the CLI. */
export function describeFleet(report: FleetReport): string {
  return [
    `${report.execs} executions, ${report.workers} workers, ${report.kills.length} SIGKILLs ` +
      `(held at each kill: ${report.kills.map((kill) => kill.held).join(', ') || '-'})`,
    `lost ${report.lost.length}, duplicate terminal events ${report.duplicateTerminals.length}, ` +
      `wrong outputs ${report.wrongOutputs.length}, missing effects ${report.missingEffects}, ` +
      `queue items not done ${report.queueNotDone}`,
    `re-runs ${report.reruns} (bound: ${report.rerunBound}, the work held at the kills)`,
    `drain exit codes ${report.drainExitCodes.join(', ')}`,
    `wall ${(report.wallMs / 1000).toFixed(1)} s, ${report.execPerSec.toFixed(1)} exec/s with the kills`,
  ].join('\n');
}
