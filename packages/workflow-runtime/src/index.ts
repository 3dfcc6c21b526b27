export {
  type Backend,
  type ExecutionFailedFields,
  type ExecutionHandle,
  type HealthOptions,
  type OpenMemoryOptions,
  openMemory,
  type PrunedExecution,
  type PruneReport,
  type PruneSkipReason,
  pruneBatchMax,
  pruneReceiptLogId,
  type RecordedError,
  type RuntimeEventListener,
  type RuntimeEventMap,
  type RuntimeEventName,
  RuntimeEvents,
  type RuntimeHealth,
  type StepBackoff,
  type StepRetryPolicy,
} from '@loom/event-runtime';
export { TerminalError, terminalError } from '@loom/middleware';
export {
  type CronDaysOfMonth,
  type CronDaysOfWeek,
  type CronFieldName,
  type CronLimitName,
  CronLimits,
  type CronNthWeekday,
  nextOccurrence,
  occurrences,
  type ParsedCron,
  parseCron,
} from './cron.js';
export { isLoomError, LoomError, WorkflowErrorCode } from './errors.js';
export {
  type CronCatchUp,
  type CronOverlap,
  type CronScheduleInput,
  type CronScheduleOutput,
  cronRunId,
  cronRunsPerGeneration,
  cronScheduleId,
  type ScheduleOptions,
} from './flow/cron-schedule.js';
export {
  defineFlow,
  type FlowCancelOn,
  type FlowConcurrency,
  type FlowDebounce,
  type FlowIdempotency,
  type FlowOptions,
  type FlowSingleton,
  type FlowThrottle,
  type FlowTrigger,
  type SignalSchemas,
  type WorkflowDefinition,
} from './flow/define-flow.js';
export { defineQuery, type QueryDefinition } from './flow/define-query.js';
export { defineSignal, type SignalDefinition } from './flow/define-signal.js';
export {
  defineUpdate,
  type UpdateDefinition,
  type UpdateValidator,
} from './flow/define-update.js';
export { type Duration, parseDuration } from './flow/duration.js';
export type { EventDelivery } from './flow/event-dispatch.js';
export type { EventMatch } from './flow/event-match.js';
export {
  type EventReceived,
  eventWaitPrefix,
  type WaitForEventOptions,
} from './flow/event-wait.js';
export type { UpdateOptions } from './flow/execution-queries.js';
export {
  type FindFlowExecutionsOptions,
  type FlowExecutionPage,
  type FlowExecutionSummary,
  findExecutionsPageDefault,
} from './flow/find-executions.js';
export {
  createRuntime,
  Runtime,
  type RuntimeOnBackend,
  type RuntimeOnStores,
  type RuntimeOptions,
  type RuntimeSettingsOptions,
  type SignalOptions,
  type SignalSent,
} from './flow/flow-runtime.js';
export type { Json, NotJson } from './flow/json.js';
export type { RuntimePruneOptions } from './flow/prune-runs.js';
export {
  eventDeliveryVersion,
  eventNameLengthMax,
  eventRunId,
  eventsQueue,
  legacyEventRunId,
  type PublishEventInput,
  type PublishedEvent,
  type PublishResult,
} from './flow/published-event.js';
export {
  type EnqueueOptions,
  type QueueWorker,
  queueExecutionId,
  type WorkOptions,
} from './flow/queue-worker.js';
export type { ScheduleDefinition, ScheduleDescription } from './flow/schedule-chain.js';
export type {
  InferInput,
  InferOutput,
  StandardIssue,
  StandardSchemaV1,
} from './flow/standard-schema.js';
export {
  type DrainReport,
  startWorker,
  type Worker,
  type WorkerOptions,
} from './flow/start-worker.js';
export type {
  Received,
  ReceivedUpdate,
  StepOptions,
  WorkflowContext,
} from './flow/workflow-context.js';
export {
  defineEffect,
  type EffectCallContext,
  type EffectDefinition,
} from './placement/define-effect.js';
export {
  type EffectServer,
  type ServeEffectsOptions,
  serveEffects,
} from './placement/effect-server.js';
export { type Placement, PlacementLimits } from './placement/placement.js';
export {
  type PlacementDecision,
  PlacementDispatcher,
  type PlacementDispatcherOptions,
} from './placement/placement-dispatcher.js';
export type { RemoteWorker } from './placement/remote-effect-client.js';
