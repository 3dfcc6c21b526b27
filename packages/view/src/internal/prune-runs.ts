import {
  type PrunedExecution,
  type PruneReport,
  pruneBatchMax,
  pruneExecutions,
  pruneReceiptLogId,
} from '@loom/event-runtime';
import { LoomError, ViewErrorCode } from '../errors.js';
import type { DbTarget } from './db-url.js';
import { openBackend } from './open-backend.js';

/** What `loom prune` did, as `--json` prints it. */
export interface PruneOutcome {
  endedBeforeMs: number;
  dryRun: boolean;
  /** What was removed (on a dry run: what would be). */
  pruned: PrunedExecution[];
  skipped: PruneReport['skipped'];
  /** The execution holding the receipts, and the sequences of the ones this call appended. */
  receiptLog: string;
  receipts: number[];
}

const durationUnitMs: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/**
 * `--ended-before`: an ISO time (`2026-11-01T00:00:00Z`) or a duration before now (`30d`,
 * `12h`, `1w2d`). Throws `INVALID_ARGUMENT` for anything else.
 */
export function parseEndedBefore(text: string, nowMs: number): number {
  const trimmed = text.trim();
  if (/^(\d+(ms|s|m|h|d|w))+$/.test(trimmed)) {
    let ms = 0;
    for (const [, amount, unit] of trimmed.matchAll(/(\d+)(ms|s|m|h|d|w)/g)) {
      ms += Number(amount) * (durationUnitMs[unit as string] as number);
    }
    if (Number.isSafeInteger(ms) && ms <= nowMs) return nowMs - ms;
  } else if (/^\d{4}-\d{2}-\d{2}/.test(trimmed)) {
    const ms = Date.parse(trimmed);
    if (Number.isSafeInteger(ms) && ms >= 0) return ms;
  }
  throw new LoomError(
    ViewErrorCode.INVALID_ARGUMENT,
    `--ended-before '${text}' is neither an ISO time (2026-11-01T00:00:00Z) nor a duration before now (30d, 12h, 1w2d)`,
    { path: 'endedBefore', actual: text },
  );
}

/**
 * `loom prune`: removes the settled runs that ended before `endedBeforeMs`, batch after batch
 * (each behind its own receipt in `loom.pruned`, ADR 0053), until none is left to look at.
 */
export async function pruneRuns(
  target: DbTarget,
  options: { endedBeforeMs: number; dryRun: boolean; batch?: number },
): Promise<PruneOutcome> {
  const backend = await openBackend(target, options.dryRun);
  const outcome: PruneOutcome = {
    endedBeforeMs: options.endedBeforeMs,
    dryRun: options.dryRun,
    pruned: [],
    skipped: [],
    receiptLog: pruneReceiptLogId,
    receipts: [],
  };
  try {
    let cursor: string | undefined;
    do {
      const report = await pruneExecutions(
        backend.events,
        backend.snapshots,
        {
          endedBeforeMs: options.endedBeforeMs,
          dryRun: options.dryRun,
          limit: options.batch ?? pruneBatchMax,
          ...(cursor === undefined ? {} : { cursor }),
        },
        Date.now(),
      );
      outcome.pruned.push(...report.pruned);
      outcome.skipped.push(...report.skipped);
      if (report.receiptSequence !== null) outcome.receipts.push(report.receiptSequence);
      cursor = report.nextCursor;
    } while (cursor !== undefined);
    return outcome;
  } finally {
    await backend.close();
  }
}
