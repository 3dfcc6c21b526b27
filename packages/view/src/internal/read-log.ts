import { type EventStore, Limits, type StoredEvent, type StoredSignal } from '@loom/event-runtime';

/** A run's whole log, read in pages of the store's maximum (one read for most runs); `onProgress` after each page. */
export async function readLog(
  store: EventStore,
  executionId: string,
  onProgress?: (events: number) => void,
): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  for (;;) {
    const page = await store.read(executionId, {
      fromSequence: out.length,
      limit: Limits.readLimitMax,
    });
    out.push(...page);
    onProgress?.(out.length);
    if (page.length < Limits.readLimitMax) return out;
  }
}

/** A run's whole inbox, in pages. */
export async function readInbox(store: EventStore, executionId: string): Promise<StoredSignal[]> {
  const out: StoredSignal[] = [];
  for (;;) {
    const last = out[out.length - 1];
    const page = await store.readSignals(executionId, {
      limit: Limits.readLimitMax,
      ...(last === undefined ? {} : { afterSignalId: last.signalId }),
    });
    out.push(...page);
    if (page.length < Limits.readLimitMax) return out;
  }
}
