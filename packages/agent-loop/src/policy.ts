import type { JsonValue } from '@loom/event-runtime';
import type { RunView } from './run-view.js';
import type { SideEffect } from './side-effect.js';

/** One tool call the model asked for, with well-formed, validated arguments. */
export interface ToolRequest {
  readonly tool: string;
  readonly sideEffect: SideEffect;
  readonly input: JsonValue;
  readonly callId: string;
  readonly turn: number;
  /** sha-256 of the exact request (run, turn, call, tool, side effect, input): what an approval binds to. */
  readonly requestHash: string;
}

/** What a policy says about one request. */
export type PolicyDecision =
  | { readonly kind: 'allow' }
  /** The call does not run; the model sees `Denied: <reason>`. */
  | { readonly kind: 'deny'; readonly reason: string }
  /** The run ends with `policy_aborted`; no call of this turn runs. */
  | { readonly kind: 'abort'; readonly reason: string }
  /**
   * The run waits, holding no lease, until a person approves or rejects, or `expiresInMs`
   * passes: then `onExpire` says what happens (see {@link ApprovalExpiry}).
   */
  | {
      readonly kind: 'require_approval';
      readonly reason: string;
      readonly expiresInMs?: number;
      /** Default `'end'`. */
      readonly onExpire?: ApprovalExpiry;
      /** With `onExpire: 're-ask'`: how many times the request is asked in all, the first included; default {@link asksMaxDefault}. */
      readonly asksMax?: number;
    };

/**
 * What an approval that passes its `expiresInMs` undecided does: `'end'` ends the run with
 * `approval_expired`; `'re-ask'` records a fresh approval of the same request (a new id, the
 * same `requestHash`, a new expiry), up to `asksMax` asks in all, and the run ends with
 * `approval_expired` when the last one expires too.
 */
export type ApprovalExpiry = 'end' | 're-ask';

/** Default asks in all (the first included) of an approval whose policy says `onExpire: 're-ask'`. */
export const asksMaxDefault = 3;

/**
 * Decides each tool request. A plain function, called inside the turn's `policy:<t>` record
 * (`ctx.record`): its answer is journaled, so a replay under changed policy code keeps what was
 * decided. It runs again if the process dies before that record is durable (ADR 0066), so it
 * decides and must not act on the world: what must happen once is a tool.
 */
export type Policy = (request: ToolRequest, view: RunView) => PolicyDecision;

/**
 * The default policy: reads, idempotent and local changes run; remote changes need an approval;
 * destructive calls are denied.
 *
 * @example
 * const policy: Policy = (request, view) =>
 *   request.tool === 'refund' && (request.input as { cents: number }).cents > 10_000
 *     ? { kind: 'require_approval', reason: 'refunds over 100 EUR' }
 *     : defaultPolicy(request, view);
 */
export const defaultPolicy: Policy = (request) => {
  switch (request.sideEffect) {
    case 'read_only':
    case 'idempotent':
    case 'local_mutation':
      return { kind: 'allow' };
    case 'remote_mutation':
      return { kind: 'require_approval', reason: `'${request.tool}' changes the world outside` };
    case 'destructive':
      return { kind: 'deny', reason: `'${request.tool}' is destructive` };
    default:
      return { kind: 'deny', reason: `'${request.tool}' declares no known side effect` };
  }
};
