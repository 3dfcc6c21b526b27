import {
  isLoomError,
  ErrorCode as KernelErrorCode,
  type QueueItem,
  type QueueStore,
} from '@loom/event-runtime';

/**
 * The partition key prefix of a singleton with `mode: 'cancel'` (`singleton-cancel:<len>:<flow>:<key>`,
 * limit 1): the queue worker recognises such items by it. Partition keys of this form are
 * reserved for it.
 */
export const singletonCancelPrefix = 'singleton-cancel:';

/** The execution id of a queue item (queue-worker.ts's, repeated to keep this file a leaf). */
const executionOf = (queue: string, itemId: string) => `queue:${queue}:${itemId}`;

/** Why a run of a cancel-mode singleton was cancelled: the newer item and run that replace it. */
export function supersededReason(queue: string, newer: string, key: string): string {
  return (
    `superseded by item ${newer} (run ${executionOf(queue, newer)}): a newer start of ` +
    `singleton key ${key.slice(singletonCancelPrefix.length)} with mode 'cancel'`
  );
}

/** Where an item of a cancel-mode singleton key stands among the key's unfinished items. */
export interface SingletonPeers {
  /** The newest unfinished item enqueued after it: it replaces this one. */
  newer: QueueItem | undefined;
  /** The unfinished items enqueued before it, oldest first. */
  older: QueueItem[];
}

/**
 * The unfinished items of `item`'s cancel-mode singleton key around it, from one read of its
 * partition; none for an item of another kind (or one no longer unfinished).
 */
export async function singletonPeers(queues: QueueStore, item: QueueItem): Promise<SingletonPeers> {
  const key = item.partitionKey;
  if (key === null || !key.startsWith(singletonCancelPrefix))
    return { newer: undefined, older: [] };
  const unfinished = await queues.unfinishedOfPartition(item.queue, key);
  const at = unfinished.findIndex((other) => other.itemId === item.itemId);
  if (at === -1) return { newer: undefined, older: [] };
  const newest = unfinished.at(-1);
  return {
    newer: newest === undefined || newest.itemId === item.itemId ? undefined : newest,
    older: unfinished.slice(0, at),
  };
}

/**
 * The newest unfinished item of `item`'s cancel-mode singleton key enqueued after it, or
 * undefined when it is the newest (or not such an item).
 */
export async function newerOfSingleton(
  queues: QueueStore,
  item: QueueItem,
): Promise<QueueItem | undefined> {
  return (await singletonPeers(queues, item)).newer;
}

/**
 * After a cancel-mode singleton's newer item was written: cancel the runs of the key's older
 * items that a worker holds (their executions end `cancelled`, naming the newer item). An older
 * item still pending is left to the worker that claims it, which completes it as cancelled
 * without starting it (only a claim holder can do that without racing a claim). An older item
 * claimed but not started yet has no execution to cancel: its worker checks for a newer item
 * after starting it and cancels it then. If `newer` finished before this reads (the enqueuer
 * stalled), it cancels nothing: the runs left may be of still newer items.
 */
export async function supersedeOlder(
  queues: QueueStore,
  cancel: (executionId: string, reason: string) => Promise<boolean>,
  queue: string,
  key: string,
  newer: string,
): Promise<void> {
  const unfinished = await queues.unfinishedOfPartition(queue, key);
  const at = unfinished.findIndex((item) => item.itemId === newer);
  if (at === -1) {
    // Finished already (run, or replaced by a still newer item) before this read: the items left
    // may be newer than it, and whatever was older was ended by the worker that started it (or
    // is the newer item's to end). Only an item past the read's cap is still unfinished: then
    // every item listed is older.
    if ((await queues.get(queue, newer))?.status !== 'done') {
      await cancelRuns(cancel, unfinished, newer);
    }
    return;
  }
  await cancelRuns(cancel, unfinished.slice(0, at), newer);
}

/**
 * Cancel the executions of `older` (items of one cancel-mode singleton key) that a worker claimed,
 * for the item `newer`. An item never started has no execution (`EXECUTION_NOT_FOUND`, ignored);
 * one already settled answers false and keeps its outcome.
 */
export async function cancelRuns(
  cancel: (executionId: string, reason: string) => Promise<boolean>,
  older: readonly QueueItem[],
  newer: string,
): Promise<void> {
  for (const item of older) {
    if (item.status !== 'running' || item.partitionKey === null) continue;
    const reason = supersededReason(item.queue, newer, item.partitionKey);
    await cancel(executionOf(item.queue, item.itemId), reason).catch((error: unknown) => {
      if (!isLoomError(error, KernelErrorCode.EXECUTION_NOT_FOUND)) throw error;
    });
  }
}
