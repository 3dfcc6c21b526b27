import { type Backend, ErrorCode, isLoomError, LoomError } from '@loom/event-runtime';
import { indexRow } from './index-row.js';

/** Rounds of "advance the fence, append" before a resume gives up on a log that keeps moving. */
const resumeAttemptsMax = 5;

/** What `operator.resume` did. */
export interface ResumeResult {
  executionId: string;
  /** The run's status before: `running` (its driver, if any, is now fenced out) or `suspended`. */
  was: 'running' | 'suspended';
  /** The fence epoch the resume took: a driver holding an older one can no longer append. */
  fenceEpoch: number;
}

/**
 * `Operator.resume`: takes the run's fence (a process still driving it stops at its next append),
 * gives up the lease its owner holds (it stops at its next renewal), and appends `execution.suspended` due now, so the next timer poll of any runtime running its
 * flow claims it and replays it from the log. A step that was in flight runs again there.
 */
export async function resumeRun(
  backend: Backend,
  executionId: string,
  options: { by: string; nowMs: number },
): Promise<ResumeResult> {
  const { events } = backend;
  for (let attempt = 0; attempt < resumeAttemptsMax; attempt++) {
    const row = await indexRow(events, executionId);
    if (row.status === 'settled') {
      throw new LoomError(
        ErrorCode.EXECUTION_SETTLED,
        `run ${executionId} has ended (${row.settledAs ?? 'settled'}): nothing to resume. A failed run reruns from its failed step with runtime.retry(id); loom fork <id> --at <sequence> starts a copy from an earlier point`,
        { executionId },
      );
    }
    const fenceEpoch = await events.fences.advance(executionId);
    // The fenced-out owner may live on and keep renewing its lease (its call hangs): give the
    // lease up for it before the run is due, so the runtime whose poll claims the wake-up can
    // lease it and drive it. The owner hears at its next renewal that it lost the lease, and stops.
    const lease = await backend.leases.get(executionId);
    if (lease !== undefined) await backend.leases.releaseMany(lease.owner, [executionId]);
    const after = await indexRow(events, executionId);
    if (after.status === 'settled') continue;
    try {
      await events.append(
        [
          {
            executionId,
            sequence: after.nextSequence,
            type: 'execution.suspended',
            payload: { wakeAtMs: options.nowMs, resumedBy: options.by },
            at: options.nowMs,
          },
        ],
        { fenceEpoch, status: 'suspended', wakeAtMs: options.nowMs },
      );
      return { executionId, was: row.status === 'running' ? 'running' : 'suspended', fenceEpoch };
    } catch (error) {
      if (
        !isLoomError(error, ErrorCode.SEQUENCE_CONFLICT) &&
        !isLoomError(error, ErrorCode.FENCE_STALE)
      ) {
        throw error;
      }
    }
  }
  throw new LoomError(
    ErrorCode.STORE_BUSY,
    `could not resume ${executionId}: its log kept moving (${resumeAttemptsMax} attempts); try again`,
    { executionId },
  );
}
