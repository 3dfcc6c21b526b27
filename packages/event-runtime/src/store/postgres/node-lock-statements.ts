import { nodeDigest } from '../../internal/node-claims.js';
import { type PgStatement, statementName } from './pg-statement.js';

// A node's claim is a session advisory lock held on a connection of its own: Postgres drops it
// when that session ends, so a process killed mid-flight reads as dead as soon as its socket
// closes. The lock's two int4 keys are the schema's key and the node id's key, so Loom's claims
// of one schema are found in pg_locks without a table. A bigint pair there shows as
// classid = first key, objid = second key, objsubid = 2 (both as unsigned oids).

/** The advisory-lock keys of a node claim: `[schemaKey, nodeKey]`, each an int4. */
export function nodeLockKeys(schema: string, nodeId: string): [number, number] {
  return [schemaKey(schema), nodeDigest(nodeId).readInt32BE(0)];
}

/** The int4 key all of a schema's node claims share. */
export function schemaKey(schema: string): number {
  return nodeDigest(`loom-node-claims:${schema}`).readInt32BE(0);
}

/** The statements of node claims, built once per lease store for its schema. */
export interface NodeLockStatements {
  /** Try the lock, never wait: `$1` schema key, `$2` node key; returns `claimed`. */
  claim: PgStatement;
  /** Held keys among `$2` (unsigned node keys, int8[]) of schema key `$1` (unsigned). */
  live: PgStatement;
  /** How many node locks of schema key `$1` (unsigned) are held. */
  count: PgStatement;
}

const heldLocks = `FROM pg_locks
WHERE locktype = 'advisory' AND granted AND objsubid = 2
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND classid::int8 = $1::int8`;

/** Builds the node-claim statements of a (validated) schema. Serves: pg_locks (in memory). */
export function nodeLockStatements(schema: string): NodeLockStatements {
  return {
    claim: {
      name: statementName(schema, 'node-claim'),
      text: 'SELECT pg_try_advisory_lock($1::int4, $2::int4) AS claimed',
    },
    live: {
      name: statementName(schema, 'node-live'),
      text: `SELECT objid::int8 AS key ${heldLocks} AND objid::int8 = ANY($2::int8[])`,
    },
    count: {
      name: statementName(schema, 'node-count'),
      text: `SELECT count(*)::int AS live ${heldLocks}`,
    },
  };
}
