import type { DetailedExecutionStatus } from '@loom/event-runtime';

/** One run as `view.runs()` lists it: a flow execution or an agent run (flow `agent:<name>`). */
export interface RunSummary {
  /** The execution id (an agent run's `runId`). */
  readonly id: string;
  /** `agent` when the flow is an agent's (`agent:<name>`), else `flow`. */
  readonly kind: 'flow' | 'agent';
  /** The flow's name as `execution.started` records it (null when the log has none). */
  readonly flow: string | null;
  /** For an agent run: the agent's name; else null. */
  readonly agent: string | null;
  readonly version: string | null;
  /** `running`, `suspended`, or how it ended: `completed`, `failed`, `cancelled`, `continued`. */
  readonly status: DetailedExecutionStatus;
  /**
   * Why it ended: an agent run's `TerminalReason` (`goal_completed`, `approval_rejected`, …), a
   * failed flow's error message, a cancel's reason, `continued as <id>`; null while it runs.
   */
  readonly terminalReason: string | null;
  /** Steps, one each: its first `step.started`, or a record's outcome (`ctx.record`: no start). */
  readonly steps: number;
  /** Approvals of an agent run that wait for a person (0 for flows). */
  readonly pendingApprovals: number;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  /** A suspended run's timer (sleep, signal timeout, approval expiry); else null. */
  readonly wakeAtMs: number | null;
  /**
   * What a suspended run waits for, from its log's open waits (`approval <approvalId>`, `answer
   * <questionId>`, `signal '<name>'`, `timer <time>`, `child <id>`; several joined by `, `): set by
   * `view.runs()` and `view.show()` on suspended runs, absent otherwise (and on the rows of
   * `projections.runs()`, which keep no waits).
   */
  readonly waitingFor?: string;
}
