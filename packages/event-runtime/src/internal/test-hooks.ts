import type { StoredRow } from './stored-row.js';

/**
 * Symbol-keyed hooks that stores expose to the `/testing` helpers only (`storedRows`,
 * `listeningChannels`, `listenerProcessId`): not part of any store's public API.
 */
export const storedRowsHook: unique symbol = Symbol.for('@loom/event-runtime/stored-rows');
export const listenerHook: unique symbol = Symbol.for('@loom/event-runtime/listener');
/**
 * `appendBatch` of a single request takes the plain append path (cheaper); the package's own
 * tests turn that off so the event-store conformance suite runs every append through the batch
 * write.
 */
export const batchOfOneHook: unique symbol = Symbol.for('@loom/event-runtime/batch-of-one');

/** A store that can show its raw rows (to prove `verify` catches tampering). */
export interface HasStoredRows {
  [storedRowsHook](executionId: string): StoredRow[];
}

/** A store with a LISTEN connection: its channels as the server reports them, and its pid. */
export interface HasListener {
  [listenerHook](): { channels(): Promise<string[]>; processId: number | undefined };
}

/** A store whose `appendBatch` of one request may take the plain append path (see above). */
export interface HasBatchOfOne {
  [batchOfOneHook](plainPath: boolean): void;
}
