/**
 * Every transaction the store opens says its isolation instead of inheriting the server's
 * default: the statements (fence `FOR SHARE`, `sendSignal`, the queue claim, migration 7) were
 * written for READ COMMITTED re-reading the newest row version after a lock wait, and a
 * distributed engine may default to another level (CockroachDB: SERIALIZABLE; YugabyteDB:
 * snapshot unless its flag is on). On PostgreSQL it is what the default already is.
 */
export const beginReadCommitted = 'BEGIN ISOLATION LEVEL READ COMMITTED';

/**
 * The startup option of the pools Loom creates, so that single autocommit statements (most of
 * the store's: every append, `claimDue`, the lease batches) run READ COMMITTED too. A pool the
 * caller passes keeps its own settings (its transactions still `BEGIN` with
 * {@link beginReadCommitted}); an `options` parameter in the connection string replaces this one.
 */
export const readCommittedStartupOption = '-c default_transaction_isolation=read\\ committed';
