import type { StoredEvent, StoredSignal } from '@loom/event-runtime';
import { EventType } from '@loom/event-runtime';
import type { Approval, ApprovalDecision } from './approval.js';
import { RecordName } from './internal/agent-flow.js';
import { isRerunnable, type SideEffect } from './side-effect.js';

/** An approved, non-rerunnable call that a copy of a run's log would run again without asking. */
export interface ForkRerun {
  /** The approval whose decision the copy carries. */
  readonly approvalId: string;
  readonly tool: string;
  readonly sideEffect: SideEffect;
  readonly turn: number;
  readonly callId: string;
}

/**
 * The approved calls of a non-rerunnable tool (`local_mutation`, `remote_mutation`,
 * `destructive`) that a run copied from `events` (a prefix of a run's log) with `signals` (the
 * inbox copied with it) would run again without asking anyone: the decision is in the copy, the
 * call's start mark and result are not. The copy is a new run, so the call gets a new idempotency
 * key (`<newRunId>/<key>`): the outside world cannot deduplicate it. A call whose start mark is in
 * the copy is not listed: the copy asks about it (`interrupted_side_effect`). What `loom fork`
 * asks about before it forks (ADR 0022, issue 27).
 *
 * @example
 * const reruns = forkReruns(log.slice(0, cut + 1), []);
 * if (reruns.length > 0) console.log(`the fork would call ${reruns[0].tool} again`);
 */
export function forkReruns(
  events: readonly StoredEvent[],
  signals: readonly StoredSignal[],
): ForkRerun[] {
  const completed = new Set<string>();
  const approvals = new Map<string, Approval>();
  const decisions = new Map<string, ApprovalDecision>();
  for (const signal of signals) {
    if (signal.name.startsWith(RecordName.approvalPrefix) && !decisions.has(signal.name)) {
      decisions.set(signal.name, signal.payload as unknown as ApprovalDecision);
    }
  }
  for (const event of events) {
    const payload = event.payload as { name?: unknown; result?: unknown; payload?: unknown };
    if (typeof payload.name !== 'string') continue;
    if (event.type === EventType.stepCompleted) {
      completed.add(payload.name);
      if (payload.name.startsWith(RecordName.approvalPrefix)) {
        approvals.set(payload.name, payload.result as unknown as Approval);
      }
    } else if (
      event.type === EventType.signalReceived &&
      payload.name.startsWith(RecordName.approvalPrefix)
    ) {
      // What the run took is what counts, whatever else the inbox holds.
      decisions.set(payload.name, payload.payload as unknown as ApprovalDecision);
    }
  }
  const out: ForkRerun[] = [];
  for (const [name, decision] of decisions) {
    const approval = approvals.get(name);
    if (approval === undefined || !runsWithoutAsking(approval, decision)) continue;
    const callKey = callKeyOf(approval, name.slice(RecordName.approvalPrefix.length), decision);
    if (callKey === undefined) continue;
    if (
      completed.has(RecordName.start(callKey.mark)) ||
      completed.has(RecordName.tool(callKey.tool))
    )
      continue;
    const { request } = approval;
    out.push({
      approvalId: approval.id,
      tool: request.tool,
      sideEffect: request.sideEffect,
      turn: request.turn,
      callId: request.callId,
    });
  }
  return out;
}

/** An approval of a non-rerunnable call, approved of the very request, in time. */
function runsWithoutAsking(approval: Approval, decision: ApprovalDecision): boolean {
  if (decision.decision !== 'approved' || decision.requestHash !== approval.requestHash)
    return false;
  if (
    approval.expiresAtMs !== null &&
    typeof decision.decidedAtMs === 'number' &&
    decision.decidedAtMs >= approval.expiresAtMs
  ) {
    return false;
  }
  return !isRerunnable(approval.request.sideEffect);
}

/**
 * The start mark and tool step an approved call runs under: a `tool_call` approval
 * (`<turn>.<index>`, a re-ask `.a<n>`) runs `tool:<turn>.<index>` after `start:<turn>`; an
 * `interrupted_side_effect` approval (`<attemptKey>.i`) resolved `rerun` runs the next attempt
 * `<turn>.<index>.r<n+1>` after its own mark. A resolution `record` runs nothing.
 */
function callKeyOf(
  approval: Approval,
  key: string,
  decision: ApprovalDecision,
): { mark: string; tool: string } | undefined {
  if (approval.kind === 'tool_call') {
    const call = /^(\d+)\.(\d+)(?:\.a\d+)?$/.exec(key);
    if (call === null) return undefined;
    return { mark: call[1] as string, tool: `${call[1]}.${call[2]}` };
  }
  if (decision.resolution?.kind === 'record') return undefined;
  const attempt = /^(\d+\.\d+)(?:\.r(\d+))?\.i$/.exec(key);
  if (attempt === null) return undefined;
  const next = `${attempt[1]}.r${Number(attempt[2] ?? '1') + 1}`;
  return { mark: next, tool: next };
}
