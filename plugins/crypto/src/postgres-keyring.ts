import { createPostgresPool } from '@loom/event-runtime/postgres';
import type pg from 'pg';
import { CryptoErrorCode, cryptoError } from './errors.js';
import {
  type KeyRow,
  type KeyTable,
  TableKeyring,
  type TableKeyringOptions,
} from './internal/table-keyring.js';
import type { KeyRef } from './keyring.js';

/** Options of {@link PostgresKeyring.open}. */
export interface PostgresKeyringOptions extends TableKeyringOptions {
  /** Where to connect; the keyring ends its own pool on `close()`. */
  connectionString?: string;
  /** A pool the caller created and will end (instead of `connectionString`). */
  pool?: pg.Pool;
  /** The schema of the key tables (created if missing). Default `loom`. */
  schema?: string;
}

interface Row {
  subject: string;
  version: number;
  wrapped: Buffer;
  master_key_id: string;
}

function keyRow(row: Row): KeyRow {
  return {
    subject: row.subject,
    version: row.version,
    wrapped: row.wrapped,
    masterKeyId: row.master_key_id,
  };
}

class PostgresKeyTable implements KeyTable {
  readonly #pool: pg.Pool;
  readonly #owned: boolean;
  readonly #sql: ReturnType<typeof statements>;

  constructor(pool: pg.Pool, owned: boolean, schema: string) {
    this.#pool = pool;
    this.#owned = owned;
    this.#sql = statements(schema);
  }

  async latest(subject: string) {
    const { rows } = await this.#pool.query<Row & { forgotten: boolean | null }>({
      name: this.#sql.latest.name,
      text: this.#sql.latest.text,
      values: [subject],
    });
    const row = rows[0];
    return {
      row: row === undefined || row.version === null ? undefined : keyRow(row),
      forgotten: row?.forgotten === true,
    };
  }

  async insert(row: KeyRow, atMs: number) {
    const { rows } = await this.#pool.query<{ forgotten: boolean; inserted: number }>({
      name: this.#sql.insert.name,
      text: this.#sql.insert.text,
      values: [row.subject, row.version, Buffer.from(row.wrapped), row.masterKeyId, atMs],
    });
    const result = rows[0] as { forgotten: boolean; inserted: number };
    if (result.forgotten) return 'forgotten';
    return result.inserted === 1 ? 'inserted' : 'exists';
  }

  async select(refs: readonly KeyRef[]) {
    const { rows } = await this.#pool.query<Row & { forgotten: boolean }>({
      name: this.#sql.select.name,
      text: this.#sql.select.text,
      values: [refs.map((ref) => ref.subject), refs.map((ref) => ref.version)],
    });
    const keys: KeyRow[] = [];
    const forgotten: string[] = [];
    for (const row of rows) {
      if (row.forgotten) forgotten.push(row.subject);
      else keys.push(keyRow(row));
    }
    return { rows: keys, forgotten };
  }

  async forget(subject: string, atMs: number) {
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      // The subject's row lock orders this after any key insert in flight (which takes it too),
      // so the DELETE below, a new statement with a new snapshot, sees that key.
      await client.query(this.#sql.addSubject, [subject]);
      const { rows } = await client.query<{ forgotten_at: string | null }>(this.#sql.lockSubject, [
        subject,
      ]);
      await client.query(this.#sql.markForgotten, [subject, atMs]);
      const deleted = await client.query(this.#sql.deleteKeys, [subject]);
      await client.query('COMMIT');
      return { destroyed: deleted.rowCount ?? 0, alreadyForgotten: rows[0]?.forgotten_at != null };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async close() {
    if (this.#owned) await this.#pool.end();
  }
}

function statements(schema: string) {
  const subjects = `"${schema}".crypto_subjects`;
  const keys = `"${schema}".crypto_keys`;
  return {
    create: `
      CREATE SCHEMA IF NOT EXISTS "${schema}";
      CREATE TABLE IF NOT EXISTS ${subjects} (
        subject text PRIMARY KEY,
        forgotten_at bigint
      );
      CREATE TABLE IF NOT EXISTS ${keys} (
        subject text NOT NULL,
        version integer NOT NULL,
        wrapped bytea NOT NULL,
        master_key_id text NOT NULL,
        created_at bigint NOT NULL,
        PRIMARY KEY (subject, version)
      );`,
    latest: {
      name: `loom_crypto_latest_${schema}`,
      text: `SELECT s.forgotten_at IS NOT NULL AS forgotten, k.subject, k.version, k.wrapped, k.master_key_id
               FROM (SELECT $1::text AS subject) AS q
               LEFT JOIN ${subjects} AS s ON s.subject = q.subject
               LEFT JOIN LATERAL (SELECT * FROM ${keys} WHERE subject = q.subject
                                   ORDER BY version DESC LIMIT 1) AS k ON true`,
    },
    // One statement: the upsert takes the subject's row lock (held to commit), so a concurrent
    // forget either sees this key or this insert sees the subject forgotten.
    insert: {
      name: `loom_crypto_insert_${schema}`,
      text: `WITH s AS (
               INSERT INTO ${subjects} (subject) VALUES ($1)
               ON CONFLICT (subject) DO UPDATE SET subject = excluded.subject
               RETURNING forgotten_at
             ), k AS (
               INSERT INTO ${keys} (subject, version, wrapped, master_key_id, created_at)
               SELECT $1, $2, $3, $4, $5 FROM s WHERE s.forgotten_at IS NULL
               ON CONFLICT (subject, version) DO NOTHING
               RETURNING version
             )
             SELECT (SELECT forgotten_at IS NOT NULL FROM s) AS forgotten,
                    (SELECT count(*) FROM k)::int AS inserted`,
    },
    select: {
      name: `loom_crypto_select_${schema}`,
      text: `SELECT false AS forgotten, k.subject, k.version, k.wrapped, k.master_key_id
               FROM unnest($1::text[], $2::int[]) AS r(subject, version)
               JOIN ${keys} AS k USING (subject, version)
             UNION ALL
             SELECT true, s.subject, NULL, NULL, NULL
               FROM ${subjects} AS s
              WHERE s.forgotten_at IS NOT NULL AND s.subject = ANY ($1::text[])`,
    },
    addSubject: `INSERT INTO ${subjects} (subject) VALUES ($1) ON CONFLICT (subject) DO NOTHING`,
    lockSubject: `SELECT forgotten_at FROM ${subjects} WHERE subject = $1 FOR UPDATE`,
    markForgotten: `UPDATE ${subjects} SET forgotten_at = $2 WHERE subject = $1 AND forgotten_at IS NULL`,
    deleteKeys: `DELETE FROM ${keys} WHERE subject = $1`,
  };
}

const schemaPattern = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * A {@link Keyring} in Postgres: tables `crypto_subjects` and `crypto_keys` in `schema`
 * (created on open), data keys stored wrapped by the provider's master key. `lookup` is one
 * round trip for a batch.
 *
 * Error codes: `SUBJECT_FORGOTTEN`, `MASTER_KEY_INVALID`, `INVALID_ARGUMENT`.
 *
 * @example
 * const keyring = await PostgresKeyring.open({ connectionString, provider: masterKeyFromEnv() });
 */
export class PostgresKeyring extends TableKeyring {
  private constructor(table: PostgresKeyTable, options: PostgresKeyringOptions) {
    super(table, options);
  }

  /** Connect, and create the schema and tables if missing. */
  static async open(options: PostgresKeyringOptions): Promise<PostgresKeyring> {
    const schema = options.schema ?? 'loom';
    if (!schemaPattern.test(schema)) {
      throw cryptoError(
        CryptoErrorCode.INVALID_ARGUMENT,
        `schema must be a lower-case SQL identifier, got '${schema}'`,
        { option: 'schema' },
      );
    }
    if ((options.pool === undefined) === (options.connectionString === undefined)) {
      throw cryptoError(
        CryptoErrorCode.INVALID_ARGUMENT,
        'pass exactly one of connectionString and pool',
        { option: 'connectionString' },
      );
    }
    const owned = options.pool === undefined;
    const pool =
      // The kernel's pool: it listens for 'error' (a server restart must not crash the process)
      // and takes a host list (ADR 0055).
      options.pool ??
      createPostgresPool({ connectionString: options.connectionString as string, max: 4 });
    try {
      await pool.query(statements(schema).create);
    } catch (error) {
      if (owned) await pool.end();
      throw error;
    }
    return new PostgresKeyring(new PostgresKeyTable(pool, owned, schema), options);
  }
}
