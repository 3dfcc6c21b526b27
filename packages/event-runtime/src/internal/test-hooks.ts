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

/**
 * Not a test hook: how `PostgresSnapshotStore.loadWithTail` hands the events it read to the
 * event store's tail cache, as the store's own `read` does, so the next append of that execution
 * needs no round trip for the previous hash. Symbol-keyed to stay out of the public API.
 */
export const rememberTailHook: unique symbol = Symbol.for('@loom/event-runtime/remember-tail');

/** A store that caches executions' tails (see {@link rememberTailHook}). */
export interface HasTailCache {
  [rememberTailHook](executionId: string, sequence: number, hash: string): void;
}

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
