import type { StoredRow } from '../internal/stored-row.js';
import {
  type HasListener,
  type HasStoredRows,
  listenerHook,
  storedRowsHook,
} from '../internal/test-hooks.js';

/**
 * The stored rows of an execution in an `InMemoryEventStore` (payload text and hashes as kept),
 * to prove that `verify` catches tampering.
 *
 * @example
 * const [first] = storedRows(store, 'order-1');
 */
export function storedRows(store: HasStoredRows, executionId: string): StoredRow[] {
  return store[storedRowsHook](executionId);
}

/** The channels a `PostgresEventStore`'s listener connection LISTENs to, as the server says. */
export function listeningChannels(store: HasListener): Promise<string[]> {
  return store[listenerHook]().channels();
}

/** The server pid of a `PostgresEventStore`'s listener connection (to kill it), if connected. */
export function listenerProcessId(store: HasListener): number | undefined {
  return store[listenerHook]().processId;
}
