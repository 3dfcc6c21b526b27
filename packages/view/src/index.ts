export { isLoomError, LoomError, ViewErrorCode } from './errors.js';
export { ExitCode, exitCodeOf } from './exit-code.js';
export type { ResumeResult } from './internal/resume-run.js';
export { type Operator, openOperator } from './open-operator.js';
export {
  openView,
  type ReadProgress,
  type RunsFilter,
  type RunsPage,
  runStatuses,
  runsPageDefault,
  type ScheduleSummary,
  type VerifyAllResult,
  type VerifyProgress,
  type View,
} from './open-view.js';
export {
  type ReplayedEvent,
  type ReplayOptions,
  type ReplayReport,
  replayDeadlineMs,
  replayLog,
} from './replay-log.js';
export { type CliIo, dbEnvVar, runCli } from './run-cli.js';
export type { AgentStepRole, RunDetail, TimelineEntry } from './run-detail.js';
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
