import type { ErasureReceipt, Keyring } from '@loom/plugin-crypto';
import { LoomError, ViewErrorCode } from '../errors.js';
import type { DbTarget } from './db-url.js';
import { openBackend } from './open-backend.js';

/**
 * `loom forget <subject>`: destroys the subject's data keys in the keyring tables of the same
 * database (`@loom/plugin-crypto`'s SQLite or Postgres keyring) and appends the erasure receipt
 * to its log. Needs no master key: forgetting unwraps nothing.
 */
export async function forgetSubject(target: DbTarget, subject: string): Promise<ErasureReceipt> {
  const crypto = await plugin(() => import('@loom/plugin-crypto'));
  const backend = await openBackend(target, false);
  try {
    let keyring: Keyring;
    if (target.kind === 'sqlite') {
      const { SqliteKeyring } = await plugin(() => import('@loom/plugin-crypto/sqlite'));
      keyring = SqliteKeyring.open({ path: target.path, cacheTtlMs: 0 });
    } else {
      const { PostgresKeyring } = await plugin(() => import('@loom/plugin-crypto/postgres'));
      keyring = await PostgresKeyring.open({
        connectionString: target.connectionString,
        cacheTtlMs: 0,
        ...(target.schema === undefined ? {} : { schema: target.schema }),
      });
    }
    try {
      return await crypto
        .encryptingEventStore(backend.events, { sensitive: {}, keyring })
        .forget(subject);
    } finally {
      await keyring.close();
    }
  } finally {
    await backend.close();
  }
}

async function plugin<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw new LoomError(
      ViewErrorCode.DRIVER_MISSING,
      'cannot load @loom/plugin-crypto: install it beside @loom/view (npm install @loom/plugin-crypto)',
      { driver: '@loom/plugin-crypto' },
      error,
    );
  }
}
