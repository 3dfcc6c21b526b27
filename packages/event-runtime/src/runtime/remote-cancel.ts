import { ErrorCode, isLoomError, LoomError } from '../errors.js';
import { childSettledSignal } from './child-settled-signal.js';
import { foldEvent, isSettled } from './core/execution-state.js';
import { EventType } from './core/kernel-events.js';
import type { KernelContext } from './kernel-context.js';
import { loadState } from './load-state.js';
import { notFound } from './not-found.js';

/** Attempts of a remote cancel while the execution's log keeps moving. */
const cancelAttemptsMax = 5;

/**
 * Cancels an execution this node does not drive: takes the fence and appends
 * `execution.cancelled`, so the owner's next append is refused. Returns false if it had already
 * settled.
 *
 * Error codes: `EXECUTION_NOT_FOUND`, `STORE_BUSY` (the log kept moving), store errors.
 */
export async function cancelRemotely(
  context: KernelContext,
  executionId: string,
  reason: string,
): Promise<boolean> {
  const { store, clock } = context;
  for (let attempt = 0; attempt < cancelAttemptsMax; attempt++) {
    const { state } = await loadState(store, context.snapshots, executionId);
    if (state === undefined) throw notFound(executionId);
    if (isSettled(state)) return false;
    const epoch = await store.fences.advance(executionId);
    for (const event of await store.read(executionId, { fromSequence: state.nextSequence }))
      foldEvent(state, event);
    if (isSettled(state)) return false;
    try {
      await store.append(
        [
          {
            executionId,
            sequence: state.nextSequence,
            type: EventType.executionCancelled,
            payload: { reason },
            at: clock.now(),
          },
        ],
        {
          fenceEpoch: epoch,
          status: 'settled',
          // A cancelled child wakes its parent in the same write, as a child that ends does.
          ...(state.parent === undefined
            ? {}
            : { notify: childSettledSignal(state.parent.executionId, executionId) }),
        },
      );
      await context.links.cancelChildren(state, reason);
      return true;
    } catch (error) {
      if (
        !isLoomError(error, ErrorCode.SEQUENCE_CONFLICT) &&
        !isLoomError(error, ErrorCode.FENCE_STALE)
      )
        throw error;
    }
  }
  throw new LoomError(
    ErrorCode.STORE_BUSY,
    `could not cancel ${executionId}: its log kept moving`,
    {
      executionId,
    },
  );
}
