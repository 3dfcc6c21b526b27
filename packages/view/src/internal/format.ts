import type { Approval, Question } from '@loom/agent-loop';
import type { QueueStats, StoredEvent } from '@loom/event-runtime';
import Table from 'cli-table3';
import type { Spend } from '../projection/projections.js';
import type { RunDetail, RunRetry } from '../run-detail.js';
import type { RunSummary } from '../run-summary.js';
import type { ScheduleSummary } from '../schedule-summary.js';

/** Longest payload shown per line by `loom events` in the human format (`--json` shows all). */
export const payloadPreviewCharsMax = 120;

/** A plain table for people (no colours, compact). */
export function formatTable(head: string[], rows: string[][]): string {
  // No colours: cli-table3 colours headers by default, which scripts and non-TTYs do not want.
  const out = new Table({ head, style: { head: [], border: [], compact: true } });
  out.push(...rows);
  return out.toString();
}

function time(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '' : new Date(ms).toISOString();
}

function preview(value: unknown): string {
  const json = JSON.stringify(value) ?? '';
  return json.length > payloadPreviewCharsMax
    ? `${json.slice(0, payloadPreviewCharsMax - 1)}…`
    : json;
}

/** A spend cell: `$0.0123`, `+N?` for calls of unknown cost, empty for no model call. */
export function formatSpend(spend: Spend | undefined): string {
  if (spend === undefined || spend.modelCalls === 0) return '';
  const known = `$${spend.costUsd.toFixed(4)}`;
  return spend.costUnknownCalls === 0 ? known : `${known} +${spend.costUnknownCalls}?`;
}

/** ANSI colours of run statuses (`color` on: a terminal, NO_COLOR unset). */
const statusColors: Readonly<Record<string, number>> = {
  completed: 32,
  failed: 31,
  cancelled: 35,
  suspended: 33,
  running: 36,
};

/** `status`, coloured when `color` is on and the status has a colour. */
export function paintStatus(status: string, color: boolean): string {
  const code = statusColors[status];
  return color && code !== undefined ? `\u001b[${code}m${status}\u001b[39m` : status;
}

/**
 * The `loom runs` table (the status column coloured when `color` is on; a SPEND column, model
 * cost in USD, when `spend` is given).
 */
export function formatRuns(
  runs: readonly RunSummary[],
  nextCursor: string | undefined,
  color = false,
  spend?: ReadonlyMap<string, Spend>,
  /** The options the next page's command repeats before `--after` (e.g. `--waiting approval`). */
  repeat = '',
): string {
  if (runs.length === 0) return 'no runs match';
  const body = formatTable(
    [
      'ID',
      'FLOW',
      'VERSION',
      'STATUS',
      'STEPS',
      'APPROVALS',
      ...(spend === undefined ? [] : ['SPEND']),
      'UPDATED',
      'REASON',
      'WAITING FOR',
    ],
    runs.map((r) => [
      r.id,
      r.flow ?? '',
      r.version ?? '',
      paintStatus(r.status, color),
      String(r.steps),
      r.pendingApprovals === 0 ? '' : `${r.pendingApprovals} pending`,
      ...(spend === undefined ? [] : [formatSpend(spend.get(r.id))]),
      time(r.updatedAtMs),
      r.terminalReason ?? '',
      r.waitingFor ?? '',
    ]),
  );
  const again = repeat === '' ? '' : `${repeat} `;
  return nextCursor === undefined ? body : `${body}\nmore: loom runs ${again}--after ${nextCursor}`;
}

/** One retry of a run: `retried at … by ana: deployed the fix` (who and why when recorded). */
export function retryLine(retry: RunRetry): string {
  const who = retry.by === undefined ? '' : ` by ${retry.by}`;
  const why = retry.reason === undefined ? '' : `: ${retry.reason}`;
  return `retried at ${time(retry.atMs)}${who}${why} (event ${retry.sequence})`;
}

/** The `loom show` page. */
export function formatDetail(detail: RunDetail): string {
  const r = detail.run;
  const lines = [
    `${r.kind} ${r.id}  ${r.flow ?? '?'}${r.version === null ? '' : `@${r.version}`}  ${r.status}`,
    `created ${time(r.createdAtMs)}  updated ${time(r.updatedAtMs)}  ${r.steps} steps  ${detail.events} events`,
  ];
  if (r.terminalReason !== null) lines.push(`reason: ${r.terminalReason}`);
  if (detail.parentId !== null) lines.push(`parent: ${detail.parentId}`);
  if (r.waitingFor !== undefined) lines.push(`waiting for: ${r.waitingFor}`);
  if (r.wakeAtMs !== null) lines.push(`wakes at ${time(r.wakeAtMs)}`);
  lines.push(`input: ${preview(detail.input)}`);
  if (detail.output !== undefined) lines.push(`output: ${preview(detail.output)}`);
  if (detail.error !== undefined) lines.push(`error: ${detail.error.message}`);
  for (const retry of detail.retries) lines.push(retryLine(retry));
  if (detail.timeline.length > 0) {
    lines.push(
      formatTable(
        ['#', 'KIND', 'NAME', 'STATUS', 'STARTED', 'MS', 'DETAIL'],
        detail.timeline.map((e) => [
          String(e.index),
          e.agentRole ?? e.kind,
          e.name,
          e.status,
          time(e.startedAtMs),
          e.durationMs === null ? '' : String(e.durationMs),
          [
            e.interruptions === 0 ? '' : `interrupted ${e.interruptions}x`,
            e.failedAttempts === 0 ? '' : `${e.failedAttempts} failed attempts`,
            e.error ?? e.childId ?? (e.result === undefined ? '' : preview(e.result)),
          ]
            .filter((part) => part !== '')
            .join('; '),
        ]),
      ),
    );
  }
  if (detail.approvals.length > 0) lines.push('approvals:', formatApprovals(detail.approvals));
  if (detail.signals.length > 0) {
    lines.push(
      'inbox:',
      ...detail.signals.map(
        (s) => `  ${s.name} ${preview(s.payload)}${s.consumed ? '' : '  (not consumed yet)'}`,
      ),
    );
  }
  return lines.join('\n');
}

/**
 * Who decided, and what the run made of it: how an interrupted call was resolved, or why the
 * run refused the decision sent (then the approval is `rejected`, whatever was sent).
 */
function decidedBy(a: Approval): string {
  if (a.decision === undefined) return '';
  const note = a.decision.note === undefined ? '' : `: ${a.decision.note}`;
  if (a.refused !== undefined) return `refused: ${a.refused} (sent by ${a.decision.by})`;
  const resolution = a.decision.resolution;
  const how =
    resolution === undefined
      ? ''
      : resolution.kind === 'rerun'
        ? ' (re-run)'
        : ` (recorded outcome ${preview(resolution.output)})`;
  return `${a.decision.by}${how}${note}`;
}

/** Approvals as a table. */
export function formatApprovals(approvals: readonly Approval[]): string {
  if (approvals.length === 0) return 'no approvals';
  return formatTable(
    ['APPROVAL', 'STATUS', 'TOOL', 'INPUT', 'REASON', 'REQUESTED', 'DECIDED BY'],
    approvals.map((a) => [
      a.id,
      a.status,
      a.request.tool,
      preview(a.request.input),
      a.reason,
      time(a.requestedAtMs),
      decidedBy(a),
    ]),
  );
}

/** The `loom questions` table. */
export function formatQuestions(questions: readonly Question[]): string {
  if (questions.length === 0) return 'no questions';
  return formatTable(
    ['QUESTION', 'STATUS', 'ASKED', 'TEXT', 'ANSWERED BY'],
    questions.map((q) => [
      q.id,
      q.status,
      time(q.askedAtMs),
      q.question.length > payloadPreviewCharsMax
        ? `${q.question.slice(0, payloadPreviewCharsMax - 1)}…`
        : q.question,
      q.answer?.by ?? '',
    ]),
  );
}

/** `loom events`: one line per event. */
export function formatEvents(events: readonly StoredEvent[]): string {
  return events
    .map((e) => `${e.sequence}\t${time(e.at)}\t${e.type}\t${preview(e.payload)}`)
    .join('\n');
}

/** The `loom queues` table. */
export function formatQueues(queues: readonly QueueStats[]): string {
  if (queues.length === 0) return 'no queues';
  return formatTable(
    ['QUEUE', 'DEPTH', 'CLAIMED', 'COMPLETED', 'FAILED', 'CANCELLED'],
    queues.map((q) => [
      q.queue,
      String(q.depth),
      String(q.claimed),
      String(q.completed),
      String(q.failed),
      String(q.cancelled),
    ]),
  );
}

/** The `loom schedules` table. */
export function formatSchedules(schedules: readonly ScheduleSummary[]): string {
  if (schedules.length === 0) return 'no schedules fire';
  return formatTable(
    ['NAME', 'EXPRESSION', 'TIMEZONE', 'FLOW', 'NEXT FIRE', 'LAST FIRED', 'LAST RUN'],
    schedules.map((s) => [
      s.name,
      s.expression,
      s.timezone,
      s.version === null ? s.flow : `${s.flow}@${s.version}`,
      time(s.nextFireAtMs),
      time(s.lastFiredAtMs),
      s.lastRunId ?? '',
    ]),
  );
}
