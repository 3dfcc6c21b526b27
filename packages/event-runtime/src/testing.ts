export { bucketOf, channelName } from './store/postgres/notify-bucket.js';
export { backendConformance } from './testing/backend-conformance.js';
export {
  type ConformanceSections,
  type EventStoreSection,
  eventStoreSections,
  type RuntimeSection,
  runtimeSections,
} from './testing/conformance-sections.js';
export {
  CountingEventStore,
  type CountingEventStoreOptions,
  type StoreCallCounts,
} from './testing/counting-event-store.js';
export {
  type ErrorCodeConformanceOptions,
  errorCodeConformance,
} from './testing/error-code-conformance.js';
export {
  type ConformanceHarness,
  eventStoreConformance,
  freshId,
} from './testing/event-store-conformance.js';
export { FlakyEventStore, type FlakyPlan } from './testing/flaky-event-store.js';
export {
  type EventStoreOperation,
  eventStoreOperations,
  type ForwardingConformanceOptions,
  forwardingConformance,
} from './testing/forwarding-conformance.js';
export { type LeaseCallCounts, leaseCalls, tickLeases } from './testing/lease-calls.js';
export {
  type LeaseStoreHarness,
  leaseStoreConformance,
} from './testing/lease-store-conformance.js';
export { type LiveStoreHarness, liveStoreConformance } from './testing/live-store-conformance.js';
export { logTails } from './testing/log-tails.js';
export { ManualClock, type TestClock } from './testing/manual-clock.js';
export {
  type QueueStoreHarness,
  queueStoreConformance,
} from './testing/queue-store-conformance.js';
export { type RuntimeHarness, runtimeConformance } from './testing/runtime-conformance.js';
export { sameProcessPeer } from './testing/same-process-peer.js';
export {
  type SnapshotStoreHarness,
  snapshotStoreConformance,
} from './testing/snapshot-store-conformance.js';
export { listenerProcessId, listeningChannels, storedRows } from './testing/store-hooks.js';
export {
  killTestProcesses,
  type ProcessEnd,
  type ProcessExit,
  spawnTestCommand,
  spawnTestProcess,
  type TestProcess,
  type TestProcessOptions,
  testProcessDeadlineMs,
  testProcessWaitMs,
} from './testing/test-process.js';
export { testScriptArgs } from './testing/test-script-bundle.js';
export { until } from './testing/until.js';
