export { isLoomError, LoomError, ViewErrorCode } from './errors.js';
export { ExitCode, exitCodeOf } from './exit-code.js';
export type { ForkOptions } from './internal/fork-run.js';
export type { ResumeResult } from './internal/resume-run.js';
export { type Operator, openOperator } from './open-operator.js';
export {
  type OpenViewOptions,
  openView,
  type ReadProgress,
  type RunsFilter,
  type RunsPage,
  runStatuses,
  runsPageDefault,
  type ScheduleSummary,
  type TailOptions,
  type VerifyAllResult,
  type VerifyProgress,
  type View,
} from './open-view.js';
export {
  createProjectionTables,
  type ProjectionDb,
  sqliteProjectionDb,
} from './projection/projection-db.js';
export {
  catchUpProjections,
  initProjections,
  openProjections,
  type ProjectedRun,
  type ProjectedRunsFilter,
  type ProjectionCheckpoint,
  type Projections,
  type ProjectorTarget,
  projectionsOn,
  type Spend,
  type SpendGroup,
  type SpendQuery,
  type SpendRow,
  startProjector,
} from './projection/projections.js';
export {
  applyBatch,
  type Projector,
  type ProjectorOptions,
  type ProjectorStats,
  projectorBatchDefault,
} from './projection/projector.js';
export type { ProjectionDatabase } from './projection/tables.js';
export {
  type ReplayedEvent,
  type ReplayOptions,
  type ReplayReport,
  replayDeadlineMs,
  replayLog,
} from './replay-log.js';
export { type CliIo, dbEnvVar, runCli } from './run-cli.js';
export type { AgentStepRole, RunDetail, RunRetry, TimelineEntry } from './run-detail.js';
export {
  type RunCounts,
  type RunOrder,
  type RunSearch,
  type RunSearchPage,
  type RunSort,
  type RunWaiting,
  runCountStatuses,
  runSearchLimitDefault,
  runSearchLimitMax,
  runWaitings,
} from './run-search.js';
export type { RunSummary } from './run-summary.js';
export {
  type Dashboard,
  type DashboardOptions,
  dashboardPollMsDefault,
  dashboardPortDefault,
  dashboardTokenCharsMin,
  startDashboard,
  tokenEnvVar,
} from './start-dashboard.js';
export type { WaitingItem } from './waiting-item.js';
