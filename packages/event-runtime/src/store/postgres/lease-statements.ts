import { type PgStatement, statementName } from './pg-statement.js';

// Each lease batch is one statement, so one round trip and one implicit transaction: the ids
// travel as one text[] parameter and unnest turns them into rows. Every statement takes its row
// locks in execution_id order (byte order, the column is COLLATE "C"), so batches racing over
// overlapping ids in any order queue behind each other instead of deadlocking.

/** The statements of `PostgresLeaseStore`, built once per store for its schema. */
export interface LeaseStatements {
  acquire: PgStatement;
  renew: PgStatement;
  release: PgStatement;
  get: PgStatement;
}

/**
 * Grant free, expired (`expires_at_ms <= now`) or already-owned ids; RETURNING lists the granted.
 * `$1` ids (unique), `$2` owner, `$3` new expiry, `$4` now, both by the store's clock.
 * ON CONFLICT locks the existing row before judging it, so of two racing owners the second sees
 * the first's lease and is refused. Serves: leases_pkey (the conflict arbiter).
 */
function acquireStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'lease-acquire'),
    text: `INSERT INTO ${quotedSchema}.leases AS l (execution_id, owner, expires_at_ms)
SELECT ids.id, $2::text, $3::bigint FROM unnest($1::text[]) AS ids(id) ORDER BY ids.id COLLATE "C"
ON CONFLICT (execution_id) DO UPDATE
  SET owner = excluded.owner, expires_at_ms = excluded.expires_at_ms
  WHERE l.expires_at_ms <= $4::bigint OR l.owner = excluded.owner
RETURNING l.execution_id`,
  };
}

/**
 * Extend the owner's leases, expired ones included (untaken, they are still the owner's);
 * RETURNING lists the renewed. `$1` ids, `$2` owner, `$3` new expiry. The CTE locks in id order
 * (LockRows runs above the sort) and re-checks the owner of a row changed meanwhile.
 * Serves: leases_pkey (join on execution_id).
 */
function renewStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'lease-renew'),
    text: `WITH mine AS (
  SELECT l.execution_id FROM ${quotedSchema}.leases AS l
  JOIN unnest($1::text[]) AS ids(id) ON l.execution_id = ids.id
  WHERE l.owner = $2::text
  ORDER BY l.execution_id
  FOR UPDATE OF l
)
UPDATE ${quotedSchema}.leases AS l SET expires_at_ms = $3::bigint
FROM mine WHERE l.execution_id = mine.execution_id
RETURNING l.execution_id`,
  };
}

/**
 * Delete the owner's leases among the ids; rows of other owners are never touched. `$1` ids,
 * `$2` owner. Locks in id order like renew. Serves: leases_pkey (join on execution_id).
 */
function releaseStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'lease-release'),
    text: `WITH mine AS (
  SELECT l.execution_id FROM ${quotedSchema}.leases AS l
  JOIN unnest($1::text[]) AS ids(id) ON l.execution_id = ids.id
  WHERE l.owner = $2::text
  ORDER BY l.execution_id
  FOR UPDATE OF l
)
DELETE FROM ${quotedSchema}.leases AS l USING mine WHERE l.execution_id = mine.execution_id`,
  };
}

/** One lease, expired or not. Serves: leases_pkey. */
function getStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'lease-get'),
    text: `SELECT owner, expires_at_ms FROM ${quotedSchema}.leases WHERE execution_id = $1::text`,
  };
}

/** Builds the lease statements of a (validated) schema. */
export function leaseStatements(quotedSchema: string, schema: string): LeaseStatements {
  return {
    acquire: acquireStatement(quotedSchema, schema),
    renew: renewStatement(quotedSchema, schema),
    release: releaseStatement(quotedSchema, schema),
    get: getStatement(quotedSchema, schema),
  };
}
