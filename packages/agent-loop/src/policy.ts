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
  /** The run waits, holding no lease, until a person approves or rejects (or `expiresInMs` passes: `approval_expired`). */
  | { readonly kind: 'require_approval'; readonly reason: string; readonly expiresInMs?: number };

/**
 * Decides each tool request. A plain function, called inside a recorded step: its answer is
 * journaled, so a replay under changed policy code keeps what was decided.
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
