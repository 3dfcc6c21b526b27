import Database from 'better-sqlite3';
import {
  type KeyRow,
  type KeyTable,
  TableKeyring,
  type TableKeyringOptions,
} from './internal/table-keyring.js';
import type { KeyRef } from './keyring.js';

/** Options of {@link SqliteKeyring.open}. */
export interface SqliteKeyringOptions extends TableKeyringOptions {
  /** The database file: the event store's own file, or another. */
  path: string;
}

const schema = `
CREATE TABLE IF NOT EXISTS loom_crypto_subjects (
  subject TEXT PRIMARY KEY,
  forgotten_at INTEGER
) STRICT;
CREATE TABLE IF NOT EXISTS loom_crypto_keys (
  subject TEXT NOT NULL,
  version INTEGER NOT NULL,
  wrapped BLOB NOT NULL,
  master_key_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (subject, version)
) STRICT;
`;

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

class SqliteKeyTable implements KeyTable {
  readonly #db: Database.Database;
  readonly #latest: Database.Statement<[string, string]>;
  readonly #forgottenOf: Database.Statement<[string]>;
  readonly #addSubject: Database.Statement<[string]>;
  readonly #insertKey: Database.Statement<[string, number, Buffer, string, number]>;
  readonly #select: Database.Statement<[string]>;
  readonly #selectForgotten: Database.Statement<[string]>;
  readonly #markForgotten: Database.Statement<[string, number]>;
  readonly #deleteKeys: Database.Statement<[string]>;

  constructor(db: Database.Database) {
    this.#db = db;
    db.exec(schema);
    this.#latest = db.prepare(
      `SELECT (SELECT forgotten_at FROM loom_crypto_subjects WHERE subject = ?) AS forgotten_at,
              k.subject, k.version, k.wrapped, k.master_key_id
         FROM (SELECT 1) LEFT JOIN (SELECT * FROM loom_crypto_keys WHERE subject = ?
                                     ORDER BY version DESC LIMIT 1) k`,
    );
    this.#forgottenOf = db.prepare(
      'SELECT forgotten_at FROM loom_crypto_subjects WHERE subject = ?',
    );
    this.#addSubject = db.prepare(
      'INSERT OR IGNORE INTO loom_crypto_subjects (subject) VALUES (?)',
    );
    this.#insertKey = db.prepare(
      `INSERT OR IGNORE INTO loom_crypto_keys (subject, version, wrapped, master_key_id, created_at)
       VALUES (?, ?, ?, ?, ?)`,
    );
    // The refs come as one JSON array of [subject, version] pairs: one statement for a batch.
    this.#select = db.prepare(
      `SELECT k.subject, k.version, k.wrapped, k.master_key_id
         FROM json_each(?) AS r
         JOIN loom_crypto_keys AS k
           ON k.subject = json_extract(r.value, '$[0]') AND k.version = json_extract(r.value, '$[1]')`,
    );
    this.#selectForgotten = db.prepare(
      `SELECT subject FROM loom_crypto_subjects
        WHERE forgotten_at IS NOT NULL AND subject IN (SELECT json_extract(value, '$[0]') FROM json_each(?))`,
    );
    this.#markForgotten = db.prepare(
      `INSERT INTO loom_crypto_subjects (subject, forgotten_at) VALUES (?, ?)
       ON CONFLICT (subject) DO UPDATE SET forgotten_at = coalesce(forgotten_at, excluded.forgotten_at)`,
    );
    this.#deleteKeys = db.prepare('DELETE FROM loom_crypto_keys WHERE subject = ?');
  }

  async latest(subject: string) {
    const row = this.#latest.get(subject, subject) as
      | (Row & { forgotten_at: number | null })
      | undefined;
    const forgotten = row?.forgotten_at !== null && row?.forgotten_at !== undefined;
    return { row: row?.subject === null || row === undefined ? undefined : keyRow(row), forgotten };
  }

  async insert(row: KeyRow, atMs: number) {
    return this.#db
      .transaction((): 'inserted' | 'exists' | 'forgotten' => {
        const subject = this.#forgottenOf.get(row.subject) as
          | { forgotten_at: number | null }
          | undefined;
        if (subject !== undefined && subject.forgotten_at !== null) return 'forgotten';
        this.#addSubject.run(row.subject);
        const { changes } = this.#insertKey.run(
          row.subject,
          row.version,
          Buffer.from(row.wrapped),
          row.masterKeyId,
          atMs,
        );
        return changes === 1 ? 'inserted' : 'exists';
      })
      .immediate();
  }

  async select(refs: readonly KeyRef[]) {
    const json = JSON.stringify(refs.map((ref) => [ref.subject, ref.version]));
    const rows = (this.#select.all(json) as Row[]).map(keyRow);
    const forgotten = (this.#selectForgotten.all(json) as Array<{ subject: string }>).map(
      (row) => row.subject,
    );
    return { rows, forgotten };
  }

  async forget(subject: string, atMs: number) {
    return this.#db
      .transaction(() => {
        const before = this.#forgottenOf.get(subject) as
          | { forgotten_at: number | null }
          | undefined;
        this.#markForgotten.run(subject, atMs);
        const { changes } = this.#deleteKeys.run(subject);
        return {
          destroyed: changes,
          alreadyForgotten: before !== undefined && before.forgotten_at !== null,
        };
      })
      .immediate();
  }

  async close() {
    this.#db.close();
  }
}

/**
 * A {@link Keyring} in a SQLite file: tables `loom_crypto_subjects` and `loom_crypto_keys`
 * (created on open), data keys stored wrapped by the provider's master key.
 *
 * Error codes: `SUBJECT_FORGOTTEN`, `MASTER_KEY_INVALID`, `INVALID_ARGUMENT`.
 *
 * @example
 * const keyring = SqliteKeyring.open({ path: 'loom.db', provider: masterKeyFromEnv() });
 */
export class SqliteKeyring extends TableKeyring {
  private constructor(db: Database.Database, options: SqliteKeyringOptions) {
    super(new SqliteKeyTable(db), options);
  }

  /** Open (and create the tables of) the keyring in the file at `options.path`. */
  static open(options: SqliteKeyringOptions): SqliteKeyring {
    const db = new Database(options.path);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    return new SqliteKeyring(db, options);
  }
}
