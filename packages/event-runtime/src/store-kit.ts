/**
 * `@loom/event-runtime/store-kit`: the service-provider interface for writing an `EventStore`
 * backend. Everything the memory, SQLite and Postgres backends share lives here once, so a
 * fourth backend is a folder that stores rows, not a fork of one of the three:
 *
 * - **append preparation**: {@link prepareAppend} validates envelopes and the guard, encodes
 *   payloads and computes the execution index update; {@link admitAppend} checks the fence and
 *   the next sequence against the log and chains the hashes ({@link chainEvents} for a backend
 *   that checks them in SQL instead).
 * - **row verification**: {@link verifyRows} recomputes the hash chain of stored rows;
 *   {@link rowToEvent} / {@link storedRowOf} convert between stored rows and events.
 * - **the subscription pump**: {@link StoreSubscriptions} is `subscribe()` for every backend,
 *   over its `read`/`readAll` and wake-ups ({@link AppendSignal} in process, or the backend's
 *   own notifications), plus a poll for writers it cannot hear.
 * - **error mapping**: a backend classifies driver errors into {@link StoreFailureKind} and
 *   {@link storeFailure} makes the typed `LoomError`; {@link alreadyStarted},
 *   {@link sequenceConflict}, {@link fenceStale}, {@link storeClosed}, {@link storeReadOnly}
 *   are the errors of the `EventStore` contract, with their messages and fields.
 * - **argument checks** shared by every call: {@link readOptions}, {@link readAllOptions},
 *   {@link findExecutionsOptions}, {@link prepareSignal}, {@link checkClaimDue},
 *   {@link claimedByOf} (the claimer a claim records, {@link claimedByField} to report it),
 *   {@link checkUnclaimDue}, …
 *
 * The conformance suites a backend must pass live in `@loom/event-runtime/testing`
 * (`eventStoreConformance` and the lease, snapshot and queue suites): they import vitest, which
 * a production backend must not load. See the README section "Writing a backend".
 *
 * @example
 * import { admitAppend, prepareAppend, StoreSubscriptions } from '@loom/event-runtime/store-kit';
 * const prepared = prepareAppend(envelopes, guard, clock.now());
 * const stored = admitAppend(prepared, { epoch: () => epochs.get(id) ?? 0, tail: () => last(id) });
 */
export {
  type AppendLookups,
  type AppendTail,
  admitAppend,
} from './internal/admit-append.js';
export { AppendSignal } from './internal/append-signal.js';
export {
  checkClaimDue,
  checkUnclaimDue,
  claimedByOf,
} from './internal/claim-due-arguments.js';
export { claimedByField } from './internal/claimed-by-field.js';
export {
  type FindExecutionsWhere,
  findExecutionsWhere,
} from './internal/find-executions-query.js';
export { matchesIndexFilter, mergeIndexUpdate } from './internal/index-filter.js';
export { decodePayload, encodePayload } from './internal/json-codec.js';
export {
  chainEvents,
  checkExecutionId,
  checkSequence,
  guardedWakeAtMs,
  type IndexUpdate,
  type PreparedAppend,
  type PreparedEvent,
  prepareAppend,
} from './internal/prepare-append.js';
export {
  type PreparedSignal,
  prepareSignal,
  readSignalsOptions,
  signalTargetMissing,
  signalTargetSettled,
} from './internal/prepare-signal.js';
export { checkPrune, type PruneArguments } from './internal/prune-arguments.js';
export {
  type FindExecutionsFilter,
  findExecutionsOptions,
  readAllOptions,
  readOptions,
} from './internal/read-options.js';
export {
  alreadyStarted,
  fenceStale,
  type StoreFailureKind,
  sequenceConflict,
  storeClosed,
  storeFailure,
  storeFailureCode,
  storeReadOnly,
} from './internal/store-errors.js';
export { type AppendFeed, StoreSubscriptions } from './internal/store-subscriptions.js';
export { rowToEvent, type StoredRow, storedRowOf } from './internal/stored-row.js';
export { verifyRows } from './internal/verify-rows.js';
export { waitingForOf } from './internal/waiting-for-of.js';
