import type { SignalInput } from '../envelope.js';

/** The signal a settled child sends its parent (the parent reads the outcome from the child's log). */
export const childSignalName = 'loom.child.settled';

/**
 * The wake-up an ending child `childId` carries to its parent in its terminal append
 * (`AppendGuard.notify`, ADR 0047): only a wake-up, the parent reads the outcome from the child's
 * log. No idempotency key: it is sent once, in the write that settles the child.
 */
export function childSettledSignal(parentId: string, childId: string): SignalInput {
  return { executionId: parentId, name: childSignalName, payload: { childId } };
}
