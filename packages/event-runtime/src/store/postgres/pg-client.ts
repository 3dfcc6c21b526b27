import type { Pool, PoolClient } from 'pg';

/** A client checked out of a pool, guarded against the death of its connection. */
export interface CheckedOutClient {
  readonly client: PoolClient;
  /** The error the connection died of while checked out, if it did. */
  readonly lost: Error | undefined;
  /**
   * Returns the client to the pool, or destroys it when its connection died or `broken` is true
   * (a connection in an unknown transaction state must never be handed to the next caller).
   */
  release(broken?: boolean): void;
}

/**
 * Checks a client out of `pool` with an `'error'` listener attached. pg removes the pool's own
 * listener while a client is checked out, so a backend that dies between two queries (server
 * restart, failover, `pg_terminate_backend`, idle-in-transaction timeout) would otherwise emit
 * an unhandled `'error'` and end the process. The error is kept instead: the next query on the
 * client fails, and the caller maps that to `STORE_UNAVAILABLE`.
 */
export async function checkOut(pool: Pool): Promise<CheckedOutClient> {
  let lost: Error | undefined;
  const onError = (error: Error) => {
    lost ??= error;
  };
  // The callback form, not the promise: pg-pool hands a client just released by a finished query
  // to the next waiter synchronously, inside the socket's parse loop, and a FATAL in the same
  // TCP chunk is emitted before a promise continuation could attach the listener.
  const client = await new Promise<PoolClient>((resolve, reject) => {
    pool.connect((error, connected) => {
      if (error !== undefined || connected === undefined) {
        reject(error ?? new Error('pg pool returned no client'));
        return;
      }
      connected.on('error', onError);
      resolve(connected);
    });
  });
  return {
    client,
    get lost() {
      return lost;
    },
    release(broken = false) {
      if (lost !== undefined || broken) {
        // Keep the listener: a dead socket may still emit while the pool destroys it.
        client.release(lost ?? true);
        return;
      }
      client.removeListener('error', onError);
      client.release();
    },
  };
}
