import type { JsonValue } from '@loom/event-runtime';
import type { ToolRequest } from './policy.js';

/**
 * Why a run waits for a person: the policy asked (`tool_call`), or a non-idempotent tool was
 * interrupted mid-call by a crash and its outcome is unknown (`interrupted_side_effect`).
 */
export type ApprovalKind = 'tool_call' | 'interrupted_side_effect';

/** Where an approval stands; read from the run's log and inbox. */
export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired';

/** How an `interrupted_side_effect` approval resolves: run the call again, or record its outcome by hand. */
export type Resolution = { kind: 'rerun' } | { kind: 'record'; output: JsonValue };

/** A decision as recorded in the run's inbox and log. */
export interface ApprovalDecision {
  readonly decision: 'approved' | 'rejected';
  readonly by: string;
  readonly decidedAtMs: number;
  readonly note?: string;
  /** The hash of the request the person decided on. */
  readonly requestHash: string;
  readonly resolution?: Resolution;
  /** A rejection that ends the run (`approval_rejected`) instead of feeding a denial back. */
  readonly endRun?: boolean;
}

/** A durable approval request, bound to the hash of the exact request. */
export interface Approval {
  /** `<runId>~<key>`: give it to `approve` / `reject`. */
  readonly id: string;
  readonly runId: string;
  readonly kind: ApprovalKind;
  readonly request: ToolRequest;
  readonly requestHash: string;
  /** Why: the policy's reason, or what was interrupted. */
  readonly reason: string;
  readonly requestedAtMs: number;
  /** When the run stops waiting for this approval (the policy's `expiresInMs`); null: never. */
  readonly expiresAtMs: number | null;
  /**
   * For a re-ask (`onExpire: 're-ask'`): which ask of the request this is, from 2, and the id of
   * the approval that expired before it. Absent on a first ask.
   */
  readonly ask?: number;
  readonly previousId?: string;
  readonly status: ApprovalStatus;
  /** Present once decided: the decision as it was sent. */
  readonly decision?: ApprovalDecision;
  /**
   * Present when the run refused the decision sent (see {@link decisionRefusal}): why. The run
   * took it as a rejection that ends the run (`approval_rejected`), so `status` is `rejected`
   * whatever `decision.decision` says.
   */
  readonly refused?: string;
}

/**
 * Why a run refuses a decision on `approval`, or undefined when it takes it. Refused: a decision
 * that names another request than the pending one (its `requestHash`), and an approval of an
 * `interrupted_side_effect` that does not say how to resolve it (`resolution` `rerun` or
 * `record`), since a call whose outcome is unknown is never re-run by default. A refused
 * decision rejects the approval and ends the run (`approval_rejected`): the run never does what
 * nobody explicitly approved. `AgentRuntime.approve` never sends one; a signal sent by other
 * means can. Listings (`approvals()`, `loom approvals`, the dashboard) fold the same verdict.
 *
 * @example
 * const why = decisionRefusal(approval, signal.payload); // 'the decision named another request'
 */
export function decisionRefusal(
  approval: Pick<Approval, 'kind' | 'requestHash'>,
  decision: unknown,
): string | undefined {
  if (typeof decision !== 'object' || decision === null) return 'the decision is not an object';
  const { requestHash, resolution } = decision as Partial<ApprovalDecision>;
  if (requestHash !== approval.requestHash) return 'the decision named another request';
  if (
    (decision as Partial<ApprovalDecision>).decision === 'approved' &&
    approval.kind === 'interrupted_side_effect' &&
    resolution?.kind !== 'rerun' &&
    resolution?.kind !== 'record'
  ) {
    return 'the approval of an interrupted call named no resolution: it must say rerun or record';
  }
  return undefined;
}
