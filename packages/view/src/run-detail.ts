import type { Approval, Question } from '@loom/agent-loop';
import type { JsonValue } from '@loom/event-runtime';
import type { RunSummary } from './run-summary.js';

/**
 * What an agent step is, from its recorded name: the model's `decision` of a turn, the `policy`
 * verdicts, a `tool_started` mark (durable before the tool runs), the `tool_call` itself (its
 * result is the observation the model sees next), an `approval` request or a `question`.
 */
export type AgentStepRole =
  | 'decision'
  | 'policy'
  | 'tool_started'
  | 'tool_call'
  | 'approval'
  | 'question';

/** One entry of a run's timeline, in log order. */
export interface TimelineEntry {
  /** `step`, `sleep` (durable timer), `wait` (for a signal), `child` (a child execution). */
  readonly kind: 'step' | 'sleep' | 'wait' | 'child';
  /** The step's, timer's, signal's or child's name. */
  readonly name: string;
  /** Its index in the flow (the durable position the kernel replays by). */
  readonly index: number;
  /**
   * `completed` (a step, a fired timer, a received signal, a completed child), `failed`,
   * `cancelled` (child), `timed_out` (a wait), or `open` (not finished in the log yet).
   */
  readonly status: 'completed' | 'failed' | 'cancelled' | 'timed_out' | 'open';
  readonly startedAtMs: number;
  /** When it finished (null while open). */
  readonly endedAtMs: number | null;
  /** `endedAtMs - startedAtMs`, by the store's clock (null while open). */
  readonly durationMs: number | null;
  /** The sequence of the event that opened it. */
  readonly sequence: number;
  /** Failed attempts before the last (retried steps). */
  readonly failedAttempts: number;
  /**
   * Times a resume found this step's attempt in flight (`step.interrupted`: its process died, or
   * another node took the run over) and ran it again. Past the runtime's `stepInterruptionsMax`
   * the step fails with `STEP_POISONED`.
   */
  readonly interruptions: number;
  /** A step's result, a received signal's payload, a child's output. */
  readonly result?: JsonValue;
  /** A failed step's or child's error message. */
  readonly error?: string;
  /** A child's execution id. */
  readonly childId?: string;
  /** A sleep's wake time or a wait's timeout (epoch ms). */
  readonly dueAtMs?: number | null;
  /** For agent runs: what the step is (see {@link AgentStepRole}). */
  readonly agentRole?: AgentStepRole;
  /** For agent steps: the turn (decision, policy) or call key (tool, approval) from the step name. */
  readonly agentKey?: string;
}

/** A run as `view.show()` returns it: the summary, its input and outcome, and its timeline. */
export interface RunDetail {
  readonly run: RunSummary;
  readonly input: JsonValue | null;
  /** The output of a completed run. */
  readonly output?: JsonValue;
  /** The error of a failed run (its message; `code` when it had one). */
  readonly error?: { readonly message: string; readonly code?: string };
  /** The parent execution, when a flow started this one as a child. */
  readonly parentId: string | null;
  readonly timeline: readonly TimelineEntry[];
  /** Signals that arrived in the inbox (delivered or not yet consumed). */
  readonly signals: readonly {
    readonly name: string;
    readonly payload: JsonValue;
    readonly consumed: boolean;
  }[];
  /** An agent run's approvals, pending and decided (empty for flows). */
  readonly approvals: readonly Approval[];
  /** An agent run's `ask_human` questions, pending and answered (empty for flows). */
  readonly questions: readonly Question[];
  /**
   * Each `execution.retried` of the run, oldest first: when, who asked and why (absent in logs
   * written before retries recorded them, or when the caller did not say).
   */
  readonly retries: readonly RunRetry[];
  /** Events in the log. */
  readonly events: number;
}

/** One retry of a failed run, as its `execution.retried` event records it. */
export interface RunRetry {
  /** The sequence of the `execution.retried` event. */
  readonly sequence: number;
  readonly atMs: number;
  /** The sequence of the `execution.failed` event it reopened. */
  readonly failedSequence: number;
  readonly by?: string;
  readonly reason?: string;
}
