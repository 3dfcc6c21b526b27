import { eventLogMigration } from './0001-event-log.js';
import { leasesAndSnapshotsMigration } from './0002-leases-and-snapshots.js';
import { signalsMigration } from './0003-signals.js';
import { queuesMigration } from './0004-queues.js';
import { executionIndexDetailsMigration } from './0005-execution-index-details.js';
import { queueOutcomesMigration } from './0006-queue-outcomes.js';
import { signalMarkMigration } from './0007-signal-mark.js';
import { startedByMigration } from './0008-started-by.js';
import { liveChunksMigration } from './0009-live-chunks.js';
import { runsPageOrderMigration } from './0010-runs-page-order.js';
import { queuePartitionLimitsMigration } from './0011-queue-partition-limits.js';
import { queueFlowControlMigration } from './0012-queue-flow-control.js';
import { queueDebounceMigration } from './0013-queue-debounce.js';
import { waitingForMigration } from './0014-waiting-for.js';
import { claimedByMigration } from './0015-claimed-by.js';
import type { PostgresMigration } from './postgres-migration.js';

/** Every Postgres migration, oldest first. Append only: a shipped migration is never edited. */
export const postgresMigrations: readonly PostgresMigration[] = [
  eventLogMigration,
  leasesAndSnapshotsMigration,
  signalsMigration,
  queuesMigration,
  executionIndexDetailsMigration,
  queueOutcomesMigration,
  signalMarkMigration,
  startedByMigration,
  liveChunksMigration,
  runsPageOrderMigration,
  queuePartitionLimitsMigration,
  queueFlowControlMigration,
  queueDebounceMigration,
  waitingForMigration,
  claimedByMigration,
];

/** The schema version this code writes and reads: the number of the newest migration. */
export const latestSchemaVersion: number =
  postgresMigrations[postgresMigrations.length - 1]?.version ?? 0;
