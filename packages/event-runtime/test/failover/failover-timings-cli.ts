// How long pg_auto_failover takes to replace a SIGKILLed primary, with its default timings and
// with Loom's tuned ones (ADR 0056), on demand (not in CI: the default timings cost ~50 s a run):
//   pnpm --filter @loom/event-runtime failover:timings [--runs 3] [--timings default,tuned]
// Per run: one cluster of its kind (monitor, primary, synchronous standby), the primary's
// processes SIGKILLed, then the time to the monitor recording the standby as wait_primary and to
// the first INSERT that commits on it; the killed node rejoins as the standby before the next run.
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import {
  defaultFailoverTimings,
  type FailoverTimings,
  startFailoverCluster,
  tunedFailoverTimings,
} from './failover-cluster.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    timings: { type: 'string', default: 'default,tuned' },
  },
});
const kinds: Record<string, FailoverTimings> = {
  default: defaultFailoverTimings,
  tuned: tunedFailoverTimings,
};
const runs = Number(values.runs);
console.log(
  `failover timings, ${runs} runs each; load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')}`,
);
const median = (list: number[]) =>
  [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] as number;
for (const kind of String(values.timings).split(',')) {
  const timings = kinds[kind];
  if (timings === undefined) throw new Error(`unknown --timings ${kind}: default or tuned`);
  const cluster = await startFailoverCluster({ timings, log: (line) => console.log(line) });
  const promoted: number[] = [];
  const writable: number[] = [];
  try {
    for (let index = 0; index < runs; index++) {
      const { node, atMs } = await cluster.killPrimary();
      const promotion = await cluster.waitForPromotion(node, atMs, 120_000);
      const writesAt = await cluster.waitForWrites(promotion.node, 120_000);
      promoted.push(promotion.reportedAtMs - atMs);
      writable.push(writesAt - atMs);
      console.log(
        `${kind} run ${index + 1}: killed ${node.name}; the monitor had ${promotion.node.name} wait_primary after ${promotion.reportedAtMs - atMs} ms, first write committed after ${writesAt - atMs} ms`,
      );
      await cluster.rejoin(node, 120_000);
    }
  } finally {
    await cluster.stop();
  }
  console.log(
    `${kind}: promotion (monitor) median ${median(promoted)} ms, ${Math.min(...promoted)}..${Math.max(...promoted)}; writable median ${median(writable)} ms, ${Math.min(...writable)}..${Math.max(...writable)}`,
  );
}
