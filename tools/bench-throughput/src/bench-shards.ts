/**
 * ADR 0039: kernel throughput through a `ShardedEventStore` over 1, 2 and 3 PostgreSQL servers.
 * The servers are throwaway clusters of the installed PostgreSQL that this script starts (fsync
 * on, like a real server; the helper of @loom/event-runtime's tests) and removes afterwards, so
 * every shard count runs on identically configured servers. 1-step and 3-step no-op flows, caller
 * ids, leases off (as in `bench`), c = 64; the shard counts are interleaved (rotating order) in
 * each repeat, and each cell's rows are checked against 2n + 2 per execution.
 *
 * All servers run on this one machine: the shards compete for its cores and its disk, so this
 * measures what routing costs and what several WAL streams give on one box, not what several
 * machines would give.
 *
 * Knobs: LOOM_BENCH_SHARD_EXECS (executions per cell, default 1024), LOOM_BENCH_REPEATS
 * (default 3), LOOM_BENCH_CONCURRENCY (default 64), LOOM_BENCH_STEPS (default 1,3).
 *
 * Usage: pnpm --filter @loom/bench-throughput bench:shards
 */
import { cpus, loadavg } from 'node:os';
import { type EventStore, ShardedEventStore } from '@loom/event-runtime';
import {
  type BenchBackend,
  dropPostgres,
  openPostgres,
  type PgTarget,
  reachPostgres,
} from './bench-backend.js';
import { type ExecutionCellResult, runExecutionCell } from './execution-cell.js';
import { formatCount, formatMs, formatRatio } from './format-number.js';
import { rotatingOrder } from './interleave.js';
import { markdownTable } from './markdown-table.js';
import { median } from './stats.js';

interface Cluster {
  url: string;
  destroy(): void;
}

const executions = Number(process.env.LOOM_BENCH_SHARD_EXECS || 1024);
const repeats = Number(process.env.LOOM_BENCH_REPEATS || 3);
const concurrency = Number(process.env.LOOM_BENCH_CONCURRENCY || 64);
const stepCounts = (process.env.LOOM_BENCH_STEPS || '1,3').split(',').map(Number);
const shardCounts = [1, 2, 3];

/** The test helper that starts a throwaway cluster (loaded at run time: it is not in src/). */
async function startCluster(): Promise<Cluster> {
  const helper = new URL(
    '../../../packages/event-runtime/test/support/throwaway-cluster.ts',
    import.meta.url,
  );
  const module = (await import(helper.href)) as {
    startThrowawayCluster(settings: { fsync?: boolean }): Promise<Cluster>;
  };
  return module.startThrowawayCluster({ fsync: true });
}

/** One bench backend whose log is a sharded store over the first `count` servers. */
function shardedBackend(backends: readonly BenchBackend[], count: number): BenchBackend {
  const shards = backends.slice(0, count);
  return {
    kind: 'postgres',
    events: new ShardedEventStore(shards.map((backend) => backend.events as EventStore)),
    leases: 'leases off in this suite',
    snapshots: 'snapshots off in this suite',
    countEvents: async () => {
      let total = 0;
      for (const backend of shards) total += await backend.countEvents();
      return total;
    },
    roundTrips: () => shards.reduce((sum, backend) => sum + (backend.roundTrips() ?? 0), 0),
    close: async () => undefined,
  };
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const loadBefore = loadavg();
  console.log(
    `bench:shards ${startedAt.toISOString()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ` +
      `load average ${loadBefore.map((value) => value.toFixed(2)).join(' ')}`,
  );
  const clusters: Cluster[] = [];
  const destroy = () => {
    for (const cluster of clusters) cluster.destroy();
  };
  process.once('exit', destroy);
  const targets: PgTarget[] = [];
  const backends: BenchBackend[] = [];
  const cells: Array<{
    steps: number;
    shards: number;
    repeat: number;
    result: ExecutionCellResult;
  }> = [];
  try {
    for (let n = 0; n < Math.max(...shardCounts); n++) {
      const cluster = await startCluster();
      clusters.push(cluster);
      const target = await reachPostgres(cluster.url);
      if (typeof target === 'string') throw new Error(`cluster ${cluster.url}: ${target}`);
      targets.push(target);
      backends.push(await openPostgres(target));
    }
    console.log(`${targets[0]?.version}, ${clusters.length} clusters (fsync on) on this machine`);
    for (const steps of stepCounts) {
      for (let repeat = 0; repeat < repeats; repeat++) {
        for (const shards of rotatingOrder(shardCounts, repeat)) {
          process.stderr.write(`steps ${steps}, ${shards} shard(s), repeat ${repeat + 1}\n`);
          const result = await runExecutionCell(
            shardedBackend(backends, shards),
            {
              cellId: `shards${shards}-s${steps}-r${repeat}`,
              steps,
              effectMs: 0,
              concurrency,
              executions,
              ids: 'caller',
              leaseMode: 'off',
            },
            () => {},
          );
          cells.push({ steps, shards, repeat, result });
        }
      }
    }
  } finally {
    for (const backend of backends) await backend.close().catch(() => undefined);
    for (const target of targets) await dropPostgres(target).catch(() => undefined);
    destroy();
    process.removeListener('exit', destroy);
  }
  const rows: string[][] = [];
  for (const steps of stepCounts) {
    const of = (shards: number) =>
      cells.filter((cell) => cell.steps === steps && cell.shards === shards);
    for (const shards of shardCounts) {
      const mine = of(shards);
      const ratios = mine.map((cell) => {
        const base = of(1).find((other) => other.repeat === cell.repeat);
        return cell.result.execPerSec / (base?.result.execPerSec ?? Number.NaN);
      });
      rows.push([
        `${steps}`,
        `${shards}`,
        (() => {
          const rates = mine.map((cell) => cell.result.execPerSec);
          return `${formatCount(median(rates))} (${formatCount(Math.min(...rates))}..${formatCount(Math.max(...rates))})`;
        })(),
        formatRatio(median(ratios)),
        formatMs(median(mine.map((cell) => cell.result.latencyMs.p50))),
        formatMs(median(mine.map((cell) => cell.result.latencyMs.p99))),
        (median(mine.map((cell) => cell.result.roundTripsPerExecution ?? 0)) || 0).toFixed(1),
      ]);
    }
  }
  console.log(
    `\n${executions} executions per cell, c = ${concurrency}, median of ${repeats}, ` +
      `load average after ${loadavg()
        .map((value) => value.toFixed(2))
        .join(' ')}\n`,
  );
  console.log(
    markdownTable(
      [
        'steps',
        'shards',
        'executions/s (min..max)',
        'vs 1 shard (same repeat)',
        'p50 latency',
        'p99 latency',
        'statements/exec',
      ],
      rows,
      ['right', 'right', 'right', 'right', 'right', 'right', 'right'],
    ),
  );
}

await main();
