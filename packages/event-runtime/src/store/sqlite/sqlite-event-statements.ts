import type Database from 'better-sqlite3';
import {
  prepareAppendStatements,
  type SqliteAppendStatements,
} from './sqlite-append-statements.js';
import {
  prepareClaimDueStatement,
  prepareUnclaimDueStatement,
} from './sqlite-claim-due-statement.js';
import { prepareFenceStatements, type SqliteFenceStatements } from './sqlite-fence-statements.js';
import { preparePruneStatements, type SqlitePruneStatements } from './sqlite-prune-statements.js';
import { prepareReadStatements, type SqliteReadStatements } from './sqlite-read-statements.js';
import {
  prepareSignalStatements,
  type SqliteSignalStatements,
} from './sqlite-signal-statements.js';

/** The SQLite event store's prepared statements. */
export interface SqliteEventStatements
  extends SqliteAppendStatements,
    SqliteFenceStatements,
    SqliteReadStatements,
    SqliteSignalStatements,
    SqlitePruneStatements {
  claimDue: ReturnType<typeof prepareClaimDueStatement>;
  unclaimDue: ReturnType<typeof prepareUnclaimDueStatement>;
}

/** Every statement the SQLite event store runs, prepared once (each file holds its SQL). */
export function prepareEventStatements(db: Database.Database): SqliteEventStatements {
  return {
    ...prepareAppendStatements(db),
    ...prepareFenceStatements(db),
    ...prepareReadStatements(db),
    ...prepareSignalStatements(db),
    ...preparePruneStatements(db),
    claimDue: prepareClaimDueStatement(db),
    unclaimDue: prepareUnclaimDueStatement(db),
  };
}
