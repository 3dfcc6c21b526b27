import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { ErrorCode, LoomError } from '../../errors.js';
import { nodeDigest, ProcessNodeClaims } from '../../internal/node-claims.js';
import type { NodeClaim } from '../../lease-store.js';
import { mapSqliteError, sqliteFailureKind } from './sqlite-errors.js';

/**
 * How long a claim waits for a lock file that another process is only probing (a probe holds it
 * for a few system calls). A live holder keeps it for good, so this is not a wait for a holder.
 */
const claimBusyTimeoutMs = 200;

/** Attempts at claiming a lock file that a prober unlinked between our open and our lock. */
const claimAttemptsMax = 3;

const lockSuffix = '.lock';

/**
 * Node claims of a SQLite lease store: one lock file per claimed node id in a directory beside
 * the database (`<database>-nodes/`), each an empty SQLite file held in an open exclusive
 * transaction by its node. The operating system drops the lock when the process dies, SIGKILL
 * included, so a prober that can lock a file knows its node is dead; it removes the file then, so
 * dead nodes do not pile up. An in-memory database is private to its process: claims live in
 * memory there.
 */
export class SqliteNodeLocks {
  private readonly directory: string | undefined;
  private readonly inProcess = new ProcessNodeClaims();

  constructor(database: Database.Database) {
    this.directory =
      database.memory || database.name === '' ? undefined : `${resolve(database.name)}-nodes`;
  }

  /** Claims `nodeId`; undefined when a live process (or this one) holds it already. */
  claim(nodeId: string): NodeClaim | undefined {
    if (this.directory === undefined) return this.inProcess.claim(nodeId);
    const path = this.pathOf(nodeId);
    try {
      mkdirSync(this.directory, { recursive: true });
    } catch (error) {
      throw fileError(error, this.directory);
    }
    for (let attempt = 0; attempt < claimAttemptsMax; attempt++) {
      const lock = lockFile(path, claimBusyTimeoutMs, false);
      if (lock === 'busy') return undefined;
      if (lock === 'gone') continue;
      // A prober may have unlinked the file between our open and our lock (it had found it
      // unlocked): the lock would then be on a file nobody else can find. Start over.
      if (!existsSync(path)) {
        lock.close();
        continue;
      }
      let released = false;
      return {
        nodeId,
        release: async () => {
          if (released) return;
          released = true;
          rmSync(path, { force: true });
          lock.close();
        },
      };
    }
    return undefined;
  }

  /** The ids among `nodeIds` whose lock file is held; the files of dead ones are removed. */
  live(nodeIds: readonly string[]): Set<string> {
    if (this.directory === undefined) return this.inProcess.live(nodeIds);
    return new Set(nodeIds.filter((nodeId) => this.probe(this.pathOf(nodeId))));
  }

  /** How many lock files are held; the files of dead nodes are removed on the way. */
  count(): number {
    if (this.directory === undefined) return this.inProcess.count;
    let names: string[];
    try {
      names = readdirSync(this.directory);
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return 0;
      throw fileError(error, this.directory);
    }
    const directory = this.directory;
    return names.filter((name) => name.endsWith(lockSuffix) && this.probe(join(directory, name)))
      .length;
  }

  /** True when the lock file is held by a live process; a dead one's file is removed. */
  private probe(path: string): boolean {
    if (!existsSync(path)) return false;
    const lock = lockFile(path, 0, true);
    if (lock === 'busy') return true;
    if (lock === 'gone') return false;
    rmSync(path, { force: true });
    lock.close();
    return false;
  }

  private pathOf(nodeId: string): string {
    return join(
      this.directory as string,
      `${nodeDigest(nodeId).toString('hex', 0, 16)}${lockSuffix}`,
    );
  }
}

/**
 * Opens `path` and takes an exclusive lock on it (an open `BEGIN EXCLUSIVE`, held until the
 * returned handle closes). `busy` when another connection holds it; `gone` when `mustExist` and
 * the file is not there (a prober removed it).
 */
function lockFile(
  path: string,
  busyTimeoutMs: number,
  mustExist: boolean,
): Database.Database | 'busy' | 'gone' {
  let lock: Database.Database;
  try {
    lock = new Database(path, { timeout: busyTimeoutMs, fileMustExist: mustExist });
  } catch (error) {
    if (mustExist && !existsSync(path)) return 'gone';
    throw mapSqliteError(error, 'open a node lock file');
  }
  try {
    lock.exec('BEGIN EXCLUSIVE');
    return lock;
  } catch (error) {
    lock.close();
    if (sqliteFailureKind(error) === 'busy') return 'busy';
    throw mapSqliteError(error, 'lock a node lock file');
  }
}

function fileError(error: unknown, path: string): LoomError {
  return new LoomError(
    ErrorCode.STORE_FAILURE,
    `could not use the node lock directory ${path}: ${(error as Error)?.message ?? String(error)}; ` +
      'the process needs to create and write files beside its SQLite database',
    { path },
    error,
  );
}
