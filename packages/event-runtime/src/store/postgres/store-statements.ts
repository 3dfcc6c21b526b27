import { appendBatchStatement, hashesAtStatement } from './append-batch-statement.js';
import { appendStatement } from './append-statement.js';
import { claimDueStatement, unclaimDueStatement } from './claim-due-statement.js';
import { fenceAdvanceStatement, fenceCurrentStatement } from './fence-statements.js';
import type { PgStatement } from './pg-statement.js';
import { pruneStatement } from './prune-statement.js';
import { readAllAfterStatement, readAllFromStartStatement } from './read-all-statement.js';
import { readSignalsStatement } from './read-signals-statement.js';
import { readStatement } from './read-statement.js';
import { quoteIdent } from './schema-name.js';
import { sendSignalStatement } from './send-signal-statement.js';
import { hashAtStatement, nextSequenceStatement } from './tail-statements.js';

/** Every prepared statement a store sends, built once per store for its schema. */
export interface StoreStatements {
  /** Indexed by `fenced ? 1 : 0` + `indexed ? 2 : 0`. */
  append: readonly [PgStatement, PgStatement, PgStatement, PgStatement];
  /** Many executions' appends in one statement (`appendBatch`, ADR 0030). */
  appendBatch: PgStatement;
  hashAt: PgStatement;
  hashesAt: PgStatement;
  nextSequence: PgStatement;
  read: PgStatement;
  readAllFromStart: PgStatement;
  readAllAfter: PgStatement;
  fenceCurrent: PgStatement;
  fenceAdvance: PgStatement;
  sendSignal: PgStatement;
  readSignals: PgStatement;
  claimDue: PgStatement;
  unclaimDue: PgStatement;
  prune: PgStatement;
}

/** Builds the statements of a (validated) schema. */
export function storeStatements(schema: string): StoreStatements {
  const quoted = quoteIdent(schema);
  return {
    append: [
      appendStatement(quoted, schema, { fenced: false, indexed: false }),
      appendStatement(quoted, schema, { fenced: true, indexed: false }),
      appendStatement(quoted, schema, { fenced: false, indexed: true }),
      appendStatement(quoted, schema, { fenced: true, indexed: true }),
    ],
    appendBatch: appendBatchStatement(quoted, schema),
    hashAt: hashAtStatement(quoted, schema),
    hashesAt: hashesAtStatement(quoted, schema),
    nextSequence: nextSequenceStatement(quoted, schema),
    read: readStatement(quoted, schema),
    readAllFromStart: readAllFromStartStatement(quoted, schema),
    readAllAfter: readAllAfterStatement(quoted, schema),
    fenceCurrent: fenceCurrentStatement(quoted, schema),
    fenceAdvance: fenceAdvanceStatement(quoted, schema),
    sendSignal: sendSignalStatement(quoted, schema),
    readSignals: readSignalsStatement(quoted, schema),
    claimDue: claimDueStatement(quoted, schema),
    unclaimDue: unclaimDueStatement(quoted, schema),
    prune: pruneStatement(quoted, schema),
  };
}
