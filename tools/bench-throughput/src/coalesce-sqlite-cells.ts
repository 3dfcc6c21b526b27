/**
 * P2's SQLite half (ADR 0030): `SqliteEventStore.append`, one event per call, one transaction
 * (and with `synchronous=FULL` one fsync) each, against the same store behind
 * `CoalescingEventStore`, whose `appendBatch` commits a whole batch in one transaction. Each
 * variant has its own file in a temporary directory; cells interleaved, ratios paired per repeat.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoalescingEventStore, type EventStore } from '@loom/event-runtime';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { type AppendMeasurement, measureAppends, storeAppender } from './append-suite.js';
import { formatCount, formatMs, formatRatio } from './format-number.js';
import { rotatingOrder } from './interleave.js';
import { roundToConcurrency } from './knobs.js';
import { markdownTable } from './markdown-table.js';
import { median } from './stats.js';

interface SqliteCell {
  variant: string;
  concurrency: number;
  repeat: number;
  result: AppendMeasurement;
  meanBatch: number | null;
}

/** Runs the SQLite cells and prints their table. */
export async function sqliteCoalesceCells(
  concurrencies: readonly number[],
  maxBatches: readonly number[],
  eventsPerCell: number,
  repeats: number,
): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'loom-bench-coalesce-'));
  const variants: Array<{
    name: string;
    store: EventStore;
    coalescing: CoalescingEventStore | undefined;
    sqlite: SqliteEventStore;
  }> = [];
  const open = (name: string) =>
    SqliteEventStore.open({
      path: join(directory, `${name}.db`),
      migrate: true,
      synchronous: 'FULL',
    });
  try {
    const plain = open('per-event');
    variants.push({ name: 'per-event', store: plain, coalescing: undefined, sqlite: plain });
    for (const maxBatch of maxBatches) {
      const sqlite = open(`coalesced-${maxBatch}`);
      const coalescing = new CoalescingEventStore(sqlite, { maxBatch });
      variants.push({ name: `coalesced ${maxBatch}`, store: coalescing, coalescing, sqlite });
    }
    for (const variant of variants) {
      await measureAppends(storeAppender(variant.store), `warm-${variant.name}`, 16, 512, () => {});
    }
    const cells: SqliteCell[] = [];
    for (const concurrency of concurrencies) {
      const events = roundToConcurrency(eventsPerCell, concurrency);
      for (let repeat = 0; repeat < repeats; repeat++) {
        for (const variant of rotatingOrder(variants, repeat)) {
          process.stderr.write(
            `sqlite c=${concurrency} ${variant.name} repeat ${repeat + 1}/${repeats}\n`,
          );
          const batchesBefore = variant.coalescing?.stats.batches ?? 0;
          const result = await measureAppends(
            storeAppender(variant.store),
            `sq-${variant.name.replace(' ', '')}-c${concurrency}-r${repeat}`,
            concurrency,
            events,
            () => {},
          );
          const batches = (variant.coalescing?.stats.batches ?? 0) - batchesBefore;
          cells.push({
            variant: variant.name,
            concurrency,
            repeat,
            result,
            meanBatch: variant.coalescing === undefined ? null : events / batches,
          });
        }
      }
    }
    for (const variant of variants) {
      const rows = (
        variant.sqlite.database.prepare('SELECT count(*) AS n FROM loom_events').get() as {
          n: number;
        }
      ).n;
      const expected =
        512 +
        concurrencies.reduce((sum, c) => sum + roundToConcurrency(eventsPerCell, c) * repeats, 0);
      if (rows !== expected) {
        throw new Error(
          `sqlite ${variant.name}: the log holds ${rows} events, expected ${expected}`,
        );
      }
    }
    printTable(
      cells,
      concurrencies,
      variants.map((variant) => variant.name),
    );
  } finally {
    for (const variant of variants) await variant.store.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

function printTable(cells: SqliteCell[], concurrencies: readonly number[], names: string[]): void {
  const rows: string[][] = [];
  for (const concurrency of concurrencies) {
    for (const name of names) {
      const mine = cells.filter(
        (cell) => cell.variant === name && cell.concurrency === concurrency,
      );
      const rates = mine.map((cell) => cell.result.eventsPerSec);
      const ratios = mine.map((cell) => {
        const base = cells.find(
          (other) =>
            other.variant === 'per-event' &&
            other.concurrency === concurrency &&
            other.repeat === cell.repeat,
        );
        return cell.result.eventsPerSec / (base?.result.eventsPerSec ?? Number.NaN);
      });
      const batch = mine.map((cell) => cell.meanBatch).filter((value) => value !== null);
      rows.push([
        `${concurrency}`,
        name,
        `${formatCount(median(rates))} (${formatCount(Math.min(...rates))}..${formatCount(Math.max(...rates))})`,
        name === 'per-event'
          ? ''
          : `${formatRatio(median(ratios))} (${formatRatio(Math.min(...ratios))}..${formatRatio(Math.max(...ratios))})`,
        batch.length === 0 ? '' : median(batch as number[]).toFixed(1),
        formatCount(median(mine.map((cell) => cell.result.machineCpuUsPerEvent ?? Number.NaN))),
        `${formatMs(median(mine.map((cell) => cell.result.latencyMs.p50)))} / ${formatMs(median(mine.map((cell) => cell.result.latencyMs.p99)))}`,
      ]);
    }
  }
  console.log(
    '\nSQLite, synchronous=FULL, WAL: one transaction per append against one per batch\n',
  );
  console.log(
    markdownTable(
      [
        'c',
        'writer',
        'events/s median (min..max)',
        '÷ per-event, same repeat',
        'appends per transaction',
        'whole-machine CPU µs/event',
        'p50 / p99 ms',
      ],
      rows,
      ['right', 'left', 'right', 'right', 'right', 'right', 'right'],
    ),
  );
}
