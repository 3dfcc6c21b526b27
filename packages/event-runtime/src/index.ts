export type { Backend } from './backend.js';
export { type CancelTimer, type Clock, systemClock, type TimerOptions } from './clock.js';
export {
  CoalescingEventStore,
  type CoalescingEventStoreOptions,
  type CoalescingStats,
  coalescingBatchMax,
  coalescingWaitMsMax,
} from './coalescing-event-store.js';
export type {
  AppendGuard,
  ClaimDueOptions,
  DetailedExecutionStatus,
  EventEnvelope,
  ExecutionStatus,
  ExecutionSummary,
  FindExecutionsOptions,
  FlowKey,
  JsonValue,
  PrunedExecution,
  PruneOptions,
  ReadAllOptions,
  ReadOptions,
  ReadSignalsOptions,
  SettledAs,
  SignalInput,
  StoredEvent,
  StoredSignal,
  WaitKind,
} from './envelope.js';
export { ErrorCode, isLoomError, LoomError, type LoomErrorFields } from './errors.js';
export type {
  AppendOutcome,
  AppendRequest,
  BatchAppendingEventStore,
  EventStore,
  FenceStore,
  SubscribeOptions,
  Subscription,
  SubscriptionHandler,
  TransactionalEventStore,
  VerifyResult,
} from './event-store.js';
export { canAppendBatch, isTransactional } from './event-store.js';
export {
  ForwardingEventStore,
  recordedPayloadText,
  type TransactRewrite,
  transactRewriting,
} from './forwarding-event-store.js';
export type { Lease, LeaseStore, NodeClaim } from './lease-store.js';
export { type LimitName, Limits } from './limits.js';
export {
  type LiveChunk,
  type LiveChunkInput,
  type LiveReadOptions,
  type LiveStore,
  liveChunkTextMax,
  liveNameLengthMax,
  liveReadLimitMax,
  sqliteLivePollMsDefault,
} from './live-store.js';
export { type MemoryBackend, type OpenMemoryOptions, openMemory } from './open-memory.js';
export { openSharded, type ShardedBackend, ShardedSnapshotStore } from './open-sharded.js';
export type {
  ClaimOptions,
  EnqueueInput,
  EnqueueResult,
  ListQueuesOptions,
  QueueDebounce,
  QueueItem,
  QueueItemOutcome,
  QueueItemStatus,
  QueueRate,
  QueueStats,
  QueueStore,
} from './queue-store.js';
export type { ExecutionFailedFields } from './runtime/core/execution-outcome.js';
export type { ExecutionState, StepRecord } from './runtime/core/execution-state.js';
export {
  EventType,
  type ExecutionRetriedPayload,
  type KernelEventType,
  type RecordedError,
  type RetryOptions,
  type StepAttemptFailedPayload,
  type StepAttemptStartedPayload,
  type StepFailedPayload,
} from './runtime/core/kernel-events.js';
export {
  type StepBackoff,
  type StepRetryPolicy,
  stepAttemptsMax,
} from './runtime/core/step-retry-policy.js';
export type {
  Flow,
  FlowContext,
  KernelStepOptions,
  RecordEffectContext,
  SignalWaitKind,
  StepEffectContext,
  TransactionHandle,
} from './runtime/flow.js';
export { type LoadedState, loadState } from './runtime/load-state.js';
export {
  type PruneExecutionsOptions,
  type PruneReceipt,
  type PruneReport,
  type PruneSkipReason,
  pruneBatchDefault,
  pruneBatchMax,
  pruneExecutions,
  pruneReceiptLogId,
  pruneReceiptType,
} from './runtime/prune-executions.js';
export type { ExecutionHandle, LeaseMode, StartOptions } from './runtime/runtime.js';
export {
  type RuntimeEventListener,
  type RuntimeEventMap,
  type RuntimeEventName,
  RuntimeEvents,
} from './runtime/runtime-events.js';
export {
  type HealthOptions,
  healthTimeoutMsDefault,
  type RuntimeHealth,
} from './runtime/runtime-health.js';
export {
  ShardCursor,
  ShardedEventStore,
  type ShardedReadAllOptions,
  type ShardedSubscribeOptions,
  shardCountMax,
  shardOf,
} from './sharded-event-store.js';
export type { Snapshot, SnapshotStore, SnapshotWithTail } from './snapshot-store.js';
export {
  InMemoryEventStore,
  type InMemoryEventStoreOptions,
} from './store/memory/in-memory-event-store.js';
export {
  InMemoryLeaseStore,
  type InMemoryLeaseStoreOptions,
} from './store/memory/in-memory-lease-store.js';
export { InMemoryLiveStore } from './store/memory/in-memory-live-store.js';
export {
  InMemoryQueueStore,
  type InMemoryQueueStoreOptions,
} from './store/memory/in-memory-queue-store.js';
export { InMemorySnapshotStore } from './store/memory/in-memory-snapshot-store.js';
export { waitKindBits, waitKinds, waitKindsOf } from './wait-kinds.js';
