import { createAgentRuntime, type Resolution } from '@loom/agent-loop';
import type { JsonValue } from '@loom/event-runtime';
import { createRuntime, type SignalSent } from '@loom/workflow-runtime';
import { parseDbUrl } from './internal/db-url.js';
import { type ForkOptions, forkRun } from './internal/fork-run.js';
import { openBackend } from './internal/open-backend.js';
import { type ResumeResult, resumeRun } from './internal/resume-run.js';

/** The operator's writes. Each goes through the runtime's or agent-loop's API, never to a table. */
export interface Operator {
  /**
   * Puts a signal in a run's inbox (a suspended run becomes due; a process running its flow picks
   * it up). Error codes: `EXECUTION_NOT_FOUND`, `EXECUTION_SETTLED`, `PAYLOAD_NOT_JSON`,
   * `LIMIT_EXCEEDED`, store errors.
   */
  signal(
    executionId: string,
    name: string,
    payload: JsonValue,
    options?: { idempotencyKey?: string },
  ): Promise<SignalSent>;
  /**
   * Cancels a run: `execution.cancelled` is appended under a new fence (the reason names `by`).
   * Returns false when it had already ended. Error codes: `EXECUTION_NOT_FOUND`, store errors.
   */
  cancel(executionId: string, options: { by: string; reason?: string }): Promise<boolean>;
  /**
   * Approves a pending approval through `@loom/agent-loop`; the run continues on a process that
   * runs its agent. An `interrupted_side_effect` approval needs a `resolution`. Error codes:
   * `APPROVAL_NOT_FOUND`, `APPROVAL_NOT_PENDING` (also when the run has ended:
   * `fields.runStatus`), `RESOLUTION_REQUIRED`, `INVALID_RESOLUTION`, `INVALID_ARGUMENT`,
   * `RUN_NOT_FOUND`, store errors.
   */
  approve(
    approvalId: string,
    options: { by: string; note?: string; resolution?: Resolution },
  ): Promise<void>;
  /** Rejects a pending approval (see {@link Operator.approve}). `endRun` ends the run. */
  reject(
    approvalId: string,
    options: { by: string; note?: string; endRun?: boolean },
  ): Promise<void>;
  /**
   * Answers a pending `ask_human` question through `@loom/agent-loop` (the first answer wins);
   * the run continues on a process that runs its agent, whose model gets
   * `{ text, by, answeredAtMs }`. Error codes: `QUESTION_NOT_FOUND`, `QUESTION_NOT_PENDING`
   * (answered, or its run has ended: `fields.runStatus`), `INVALID_ARGUMENT`, `RUN_NOT_FOUND`,
   * store errors.
   */
  answer(questionId: string, options: { by: string; text: string }): Promise<void>;
  /**
   * Resumes a run now, wherever its flow runs: takes its fence (a process still driving it, a
   * zombie, stops at its next append) and marks it due, so the next timer poll of a runtime
   * running its flow replays it from the log (a step in flight runs again). For a run whose
   * process died before its lease expired, or one suspended on a wait you want looked at again.
   *
   * Error codes: `RUN_NOT_FOUND`, `EXECUTION_SETTLED` (it ended: `retry` or `fork` instead),
   * `STORE_BUSY` (the log kept moving), store errors.
   */
  resume(executionId: string, options: { by: string }): Promise<ResumeResult>;
  /**
   * Retries a failed run from its failed step, wherever its flow runs: appends
   * `execution.retried` with the run due (as `runtime.retry` does under `handOffStarts`), so the
   * next timer poll of a runtime running its flow replays it: completed steps replay, the failed
   * step runs again with a fresh attempt budget. Deploy the fix first. `options.by` and
   * `options.reason` are recorded in the `execution.retried` event (the run page shows them).
   *
   * Error codes: `EXECUTION_NOT_FOUND`, `EXECUTION_NOT_FAILED` (`fields.status`: it runs, completed,
   * was cancelled, or a retry is already under way), `STORE_BUSY`, store errors.
   */
  retry(
    executionId: string,
    options?: { by?: string; reason?: string },
  ): Promise<{ executionId: string }>;
  /**
   * Forks a run: a new execution whose log is a copy of `executionId`'s up to and including
   * `atSequence` (its `execution.started` names the original in `forkedFrom`, with who forked it).
   * No process is told: a runtime that runs its flow resumes it as its next recovery round finds
   * it (running and unleased: at once when no other node is alive, else once quiet for
   * `recoverQuietMs`); a fork that ends waiting (suspended) waits as the original did. Steps
   * after the cut run again in the fork; children are not copied (a recorded child is the
   * original's). The inbox signals the kept log took are copied (with those before them), so the
   * fork's approvals list as its log decided them. A fork whose log holds the approval of a
   * non-rerunnable call but not the call would run it again, under a new idempotency key,
   * without asking anyone: it is refused with `FORK_WOULD_RERUN` unless `allowRerun` is true.
   * Returns the new id (default `fork-<atSequence>-of-<executionId>`).
   *
   * Error codes: `RUN_NOT_FOUND`, `INVALID_ARGUMENT` (a sequence past the log or at its ending),
   * `FORK_WOULD_RERUN`, `EXECUTION_ALREADY_STARTED` (the new id exists), store errors.
   */
  fork(executionId: string, options: ForkOptions): Promise<string>;
  close(): Promise<void>;
}

/**
 * Opens the operator's write side on the database at `db` (as {@link openView}: nothing is created
 * or migrated; the schema is checked before the database is opened for writing). It registers no
 * flow and drives nothing: runs continue on the processes that run them.
 *
 * Error codes: `INVALID_DB_URL`, `SCHEMA_NOT_MIGRATED`, `SCHEMA_TOO_NEW`, `STORE_UNAVAILABLE`.
 *
 * @example
 * const operator = await openOperator({ db: 'sqlite:./loom.db' });
 * await operator.approve('run-7~1.0', { by: 'ana', note: 'refund under 50 EUR' });
 * await operator.close();
 */
export async function openOperator(options: { db: string }): Promise<Operator> {
  const backend = await openBackend(parseDbUrl(options.db), false);
  // It registers no flow, so it must drive nothing: no timer poll, no recovery round (one would
  // take a dead worker's leases it cannot run, and hold them as a live owner while the restarted
  // worker waits them out), and so no node claim (it would count as a live worker, which makes
  // workers wait `recoverQuietMs` for unleased executions of a dead one).
  // handOffStarts: a retry it makes is written due for a worker, and needs no flow here.
  const flows = createRuntime({ backend, handOffStarts: true, timerPollMs: 0, recoverEveryMs: 0 });
  const agents = createAgentRuntime({ flows, agents: [] });
  return {
    signal: (executionId, name, payload, signalOptions) =>
      flows.signal(executionId, name, payload, signalOptions ?? {}),
    cancel: (executionId, cancelOptions) =>
      flows.cancel(
        executionId,
        `cancelled by ${cancelOptions.by}${cancelOptions.reason === undefined ? '' : `: ${cancelOptions.reason}`}`,
      ),
    approve: (approvalId, approveOptions) => agents.approve(approvalId, approveOptions),
    reject: (approvalId, rejectOptions) => agents.reject(approvalId, rejectOptions),
    answer: (questionId, answerOptions) => agents.answer(questionId, answerOptions),
    fork: (executionId, forkOptions) => forkRun(backend, executionId, forkOptions),
    retry: async (executionId, retryOptions) => {
      await flows.retry(executionId, retryOptions ?? {});
      return { executionId };
    },
    resume: (executionId, resumeOptions) =>
      resumeRun(backend, executionId, { by: resumeOptions.by, nowMs: Date.now() }),
    close: () => flows.shutdown(),
  };
}
