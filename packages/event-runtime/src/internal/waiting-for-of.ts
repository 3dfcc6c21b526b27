import type { ExecutionStatus, ExecutionSummary } from '../envelope.js';
import { waitKindsOf } from '../wait-kinds.js';

/**
 * A summary's `waitingFor` from an index row's status and `waiting_for` bits: the kinds while
 * suspended and known, nothing otherwise (a spread: `exactOptionalPropertyTypes`).
 */
export function waitingForOf(
  status: ExecutionStatus,
  bits: number | string | null | undefined,
): Pick<ExecutionSummary, 'waitingFor'> {
  if (status !== 'suspended' || bits === null || bits === undefined) return {};
  return { waitingFor: waitKindsOf(Number(bits)) };
}
