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

/**
 * The newest unfinished item of `item`'s cancel-mode singleton key enqueued after it, or
 * undefined when it is the newest (or not such an item).
 */
export async function newerOfSingleton(
  queues: QueueStore,
  item: QueueItem,
): Promise<QueueItem | undefined> {
  const key = item.partitionKey;
  if (key === null || !key.startsWith(singletonCancelPrefix)) return undefined;
  const unfinished = await queues.unfinishedOfPartition(item.queue, key);
  const at = unfinished.findIndex((other) => other.itemId === item.itemId);
  const newest = unfinished.at(-1);
  return at === -1 || newest === undefined || newest.itemId === item.itemId ? undefined : newest;
}

/**
 * After a cancel-mode singleton's newer item was written: cancel the runs of the key's older
 * items that a worker holds (their executions end `cancelled`, naming the newer item). An older
 * item still pending is left to the worker that claims it, which completes it as cancelled
 * without starting it (only a claim holder can do that without racing a claim). An older item
 * claimed but not started yet has no execution to cancel: its worker checks for a newer item
 * after starting it and cancels it then.
 */
export async function supersedeOlder(
  queues: QueueStore,
  cancel: (executionId: string, reason: string) => Promise<boolean>,
  queue: string,
  key: string,
  newer: string,
): Promise<void> {
  const unfinished = await queues.unfinishedOfPartition(queue, key);
  const reason = supersededReason(queue, newer, key);
  for (const older of unfinished) {
    if (older.itemId === newer) break;
    if (older.status !== 'running') continue;
    await cancel(executionOf(queue, older.itemId), reason).catch((error: unknown) => {
      if (!isLoomError(error, KernelErrorCode.EXECUTION_NOT_FOUND)) throw error;
    });
  }
}
