import { callOfEvent, decisionRefusal } from '@loom/agent-loop';
import { EventType, type JsonValue, type StoredEvent } from '@loom/event-runtime';
import type { Insertable } from 'kysely';
import { agentFlowPrefix, num as numOf, record, text as textOf } from '../internal/fold-run.js';
import type { ProjectionApprovalsTable, ProjectionModelCallsTable } from './tables.js';

/** A run's row as the fold keeps it (numbers normalized). */
export interface RunRow {
  id: string;
  kind: string;
  flow: string | null;
  agent: string | null;
  version: string | null;
  status: string;
  terminal_reason: string | null;
  steps: number;
  open_steps: string;
  pending_approvals: number;
  model_calls: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  cost_unknown_calls: number;
  created_at_ms: number;
  updated_at_ms: number;
  wake_at_ms: number | null;
  last_sequence: number;
}

/** An approval's row as the fold keeps it. */
export type ApprovalRow = Insertable<ProjectionApprovalsTable> & {
  requested_at_ms: number;
  expires_at_ms: number | null;
};

/** A schedule generation's row as the fold keeps it. */
export interface ScheduleRow {
  execution_id: string;
  name: string;
  expression: string;
  timezone: string;
  flow: string;
  version: string | null;
  status: string;
  wake_at_ms: number | null;
  last_fired_at_ms: number | null;
  last_run_id: string | null;
}

/** The flow a schedule's generations run under (`@loom/workflow-runtime`'s cron chain). */
export const scheduleFlowName = 'loom.cron.schedule';

/** What the rows of the runs in a batch were before it (read in one query per table). */
export interface FoldInput {
  runs: Map<string, RunRow>;
  /** Schedule rows of those runs that are schedule generations, by execution id. */
  schedules?: Map<string, ScheduleRow>;
  /** Pending approvals of those runs, by run id, then by name (`approval:<key>`). */
  pendingApprovals: Map<string, Map<string, ApprovalRow>>;
}

/** What one batch changes: the rows to upsert and insert. */
export interface FoldOutput {
  runs: RunRow[];
  approvals: ApprovalRow[];
  modelCalls: Insertable<ProjectionModelCallsTable>[];
  schedules: ScheduleRow[];
  /** Events folded (a redelivered one — at or below its run's last sequence — is not). */
  applied: number;
}

function text(value: JsonValue | undefined): string | null {
  return textOf(value) ?? null;
}

function num(value: JsonValue | undefined): number | null {
  return numOf(value) ?? null;
}

const approvalPrefix = 'approval:';

function newRun(event: StoredEvent): RunRow {
  return {
    id: event.executionId,
    kind: 'flow',
    flow: null,
    agent: null,
    version: null,
    status: 'running',
    terminal_reason: null,
    steps: 0,
    open_steps: '[]',
    pending_approvals: 0,
    model_calls: 0,
    input_tokens: 0,
    output_tokens: 0,
    cost_usd: 0,
    cost_unknown_calls: 0,
    created_at_ms: event.at,
    updated_at_ms: event.at,
    wake_at_ms: null,
    last_sequence: -1,
  };
}

/** The UTC day of an epoch-ms instant, `YYYY-MM-DD`. */
export function utcDay(atMs: number): string {
  return new Date(atMs).toISOString().slice(0, 10);
}

/**
 * Folds a batch of the global log into the rows it changes. Pure: the same batch over the same
 * rows gives the same output, and an event at or below its run's `last_sequence` changes nothing
 * (a redelivery after a crash between the store's read and the projector's commit, or a batch
 * replayed twice). The same summaries `view.runs()` folds from a run's log (`foldRun`).
 */
export function foldBatch(events: readonly StoredEvent[], input: FoldInput): FoldOutput {
  const changed = new Map<string, RunRow>();
  const approvals = new Map<string, ApprovalRow>();
  const modelCalls: Insertable<ProjectionModelCallsTable>[] = [];
  const schedules = new Map<string, ScheduleRow>();
  let applied = 0;
  for (const event of events) {
    const before = changed.get(event.executionId) ?? input.runs.get(event.executionId);
    if (before !== undefined && event.sequence <= before.last_sequence) continue;
    const run: RunRow = before === undefined ? newRun(event) : { ...before };
    run.last_sequence = event.sequence;
    run.updated_at_ms = event.at;
    applied += 1;
    const p = record(event.payload);
    const ending = (status: string, reason: string | null) => {
      run.status = status;
      run.terminal_reason = reason;
      run.wake_at_ms = null;
      // An approval nobody decided before the run ended waits for no one any more.
      for (const approval of input.pendingApprovals.get(run.id)?.values() ?? []) {
        approval.status = 'abandoned';
        approvals.set(approval.id, approval);
      }
      input.pendingApprovals.get(run.id)?.clear();
      run.pending_approvals = 0;
    };
    if (run.status === 'suspended' && event.type !== EventType.executionSuspended) {
      run.status = 'running';
      run.wake_at_ms = null;
    }
    switch (event.type) {
      case EventType.executionStarted: {
        run.flow = text(p.flow);
        run.version = text(p.version);
        run.created_at_ms = event.at;
        if (run.flow?.startsWith(agentFlowPrefix)) {
          run.kind = 'agent';
          run.agent = run.flow.slice(agentFlowPrefix.length);
        }
        break;
      }
      case EventType.executionSuspended:
        run.status = 'suspended';
        run.wake_at_ms = num(p.wakeAtMs);
        break;
      case EventType.stepStarted: {
        const open = JSON.parse(run.open_steps) as number[];
        const index = num(p.index) ?? -1;
        if (!open.includes(index)) {
          run.steps += 1;
          open.push(index);
          run.open_steps = JSON.stringify(open);
        }
        break;
      }
      case EventType.stepCompleted:
      case EventType.stepFailed: {
        const index = num(p.index) ?? -1;
        const open = JSON.parse(run.open_steps) as number[];
        if (open.includes(index)) run.open_steps = JSON.stringify(open.filter((i) => i !== index));
        // A record (`ctx.record`) has no start: its outcome counts it.
        else if (p.record === true) run.steps += 1;
        if (event.type === EventType.stepFailed || run.kind !== 'agent') break;
        const name = text(p.name) ?? '';
        if (name.startsWith(approvalPrefix)) {
          const approval = record(p.result);
          const request = record(approval.request);
          const row: ApprovalRow = {
            id: text(approval.id) ?? `${run.id}~${name.slice(approvalPrefix.length)}`,
            run_id: run.id,
            name,
            kind: text(approval.kind) ?? 'tool_call',
            tool: text(request.tool),
            reason: text(approval.reason),
            status: 'pending',
            decided_by: null,
            requested_at_ms: num(approval.requestedAtMs) ?? event.at,
            expires_at_ms: num(approval.expiresAtMs),
            approval: JSON.stringify(p.result ?? null),
          };
          approvals.set(row.id, row);
          let pending = input.pendingApprovals.get(run.id);
          if (pending === undefined) {
            pending = new Map();
            input.pendingApprovals.set(run.id, pending);
          }
          pending.set(name, row);
          run.pending_approvals += 1;
          break;
        }
        const call = callOfEvent(event);
        if (call !== undefined) {
          run.model_calls += 1;
          run.input_tokens += call.inputTokens ?? 0;
          run.output_tokens += call.outputTokens ?? 0;
          if (call.costUsd === null) run.cost_unknown_calls += 1;
          else run.cost_usd += call.costUsd;
          modelCalls.push({
            run_id: run.id,
            sequence: event.sequence,
            agent: run.agent,
            provider: call.provider,
            model: call.model,
            day: utcDay(event.at),
            at_ms: event.at,
            input_tokens: call.inputTokens,
            output_tokens: call.outputTokens,
            cost_usd: call.costUsd,
          });
        }
        break;
      }
      case EventType.signalReceived:
      case EventType.signalTimedOut: {
        const name = text(p.name) ?? '';
        const pending = input.pendingApprovals.get(run.id);
        const approval = pending?.get(name);
        if (approval === undefined) break;
        pending?.delete(name);
        run.pending_approvals = Math.max(0, run.pending_approvals - 1);
        if (event.type === EventType.signalTimedOut) {
          approval.status = 'expired';
        } else {
          // What the run decided, not what was sent: a refused decision (another request's
          // hash, an interrupted call approved without a resolution) is a rejection.
          const decision = record(p.payload);
          const asked = record(JSON.parse(approval.approval));
          const refused = decisionRefusal(
            {
              kind:
                text(asked.kind) === 'interrupted_side_effect'
                  ? 'interrupted_side_effect'
                  : 'tool_call',
              requestHash: text(asked.requestHash) ?? '',
            },
            p.payload,
          );
          approval.status =
            refused === undefined && text(decision.decision) === 'approved'
              ? 'approved'
              : 'rejected';
          approval.decided_by = text(decision.by);
        }
        approvals.set(approval.id, approval);
        break;
      }
      case EventType.executionCompleted:
        ending(
          'completed',
          run.kind === 'agent' ? (text(record(p.output).reason) ?? 'completed') : 'completed',
        );
        break;
      case EventType.executionFailed: {
        const error = record(p.error);
        ending('failed', text(error.message) ?? JSON.stringify(p.error ?? null));
        break;
      }
      case EventType.executionCancelled:
        ending('cancelled', text(p.reason) ?? 'cancelled');
        break;
      case EventType.executionContinuedAsNew:
        ending('continued', `continued as ${text(p.successorId) ?? '?'}`);
        break;
      case EventType.executionRetried: {
        run.status = 'running';
        run.terminal_reason = null;
        // The failed step runs again: open, so its next outcome closes it without counting it
        // again (a record's outcome counts only a step that is not open).
        const stepIndex = num(p.stepIndex);
        if (stepIndex !== null) {
          const open = JSON.parse(run.open_steps) as number[];
          if (!open.includes(stepIndex)) run.open_steps = JSON.stringify([...open, stepIndex]);
        }
        break;
      }
      default:
        break;
    }
    changed.set(run.id, run);
    if (run.flow === scheduleFlowName) {
      const schedule = foldSchedule(
        schedules.get(run.id) ?? input.schedules?.get(run.id),
        event,
        run,
      );
      if (schedule !== undefined) schedules.set(run.id, schedule);
    }
  }
  return {
    runs: [...changed.values()],
    approvals: [...approvals.values()],
    modelCalls,
    schedules: [...schedules.values()],
    applied,
  };
}

/**
 * One event of a schedule generation folded into its row, after the run's own fold: the
 * definition from `execution.started`'s input (see `CronScheduleInput`), the last occurrence from
 * its `fire-<ms>` steps, status and timer from the run. As `view.schedules()` reads them.
 */
function foldSchedule(
  before: ScheduleRow | undefined,
  event: StoredEvent,
  run: RunRow,
): ScheduleRow | undefined {
  let row = before === undefined ? undefined : { ...before };
  const p = record(event.payload);
  if (event.type === EventType.executionStarted) {
    const input = record(p.input);
    const expression = text(input.expression);
    const name = text(input.name);
    if (expression === null || name === null) return undefined;
    row = {
      execution_id: run.id,
      name,
      expression,
      timezone: text(input.timezone) ?? 'UTC',
      flow: text(input.flow) ?? '',
      version: text(input.version),
      status: run.status,
      wake_at_ms: null,
      last_fired_at_ms: num(input.lastFiredAtMs),
      last_run_id: text(input.lastRunId),
    };
  }
  if (row === undefined) return undefined;
  if (event.type === EventType.stepCompleted) {
    const fired = /^fire-(\d+)$/.exec(text(p.name) ?? '');
    if (fired !== null) {
      row.last_fired_at_ms = Number(fired[1]);
      // The step returns false when the occurrence was skipped (overlap 'skip'): no run started.
      if (p.result === true) row.last_run_id = `cron:${row.name}:${row.last_fired_at_ms}`;
    }
  }
  row.status = run.status;
  row.wake_at_ms = run.wake_at_ms;
  return row;
}
