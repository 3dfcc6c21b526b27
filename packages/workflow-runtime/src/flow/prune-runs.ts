import {
  type EventStore,
  type PruneReport,
  pruneExecutions,
  type SnapshotStore,
} from '@loom/event-runtime';
import { LoomError, WorkflowErrorCode } from '../errors.js';

/** What `runtime.prune` removes: one batch of settled executions that ended before a time. */
export interface RuntimePruneOptions {
  /** Settled executions whose status last changed before this instant (a Date or epoch ms). */
  endedBefore: Date | number;
  /** Most executions this call looks at, 1 to `pruneBatchMax` (1,000). Default 100. */
  limit?: number;
  /** The previous call's `nextCursor`, to go on where it stopped. */
  cursor?: string;
  /** Choose and check, but write no receipt and remove nothing. */
  dryRun?: boolean;
}

/** `runtime.prune`: the options checked and turned into the kernel's `pruneExecutions`. */
export async function pruneRuns(
  store: EventStore,
  snapshots: SnapshotStore | undefined,
  options: RuntimePruneOptions,
  nowMs: number,
): Promise<PruneReport> {
  if (typeof options !== 'object' || options === null) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      'prune takes { endedBefore, limit?, cursor?, dryRun? }',
      { path: 'options' },
    );
  }
  const { endedBefore, ...rest } = options;
  const endedBeforeMs = endedBefore instanceof Date ? endedBefore.getTime() : endedBefore;
  if (typeof endedBeforeMs !== 'number' || !Number.isSafeInteger(endedBeforeMs)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `prune's endedBefore must be a valid Date or epoch ms, got ${String(endedBefore)}`,
      { path: 'endedBefore' },
    );
  }
  return pruneExecutions(store, snapshots, { ...rest, endedBeforeMs }, nowMs);
}
