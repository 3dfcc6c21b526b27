import type { EventStore } from '../event-store.js';

/**
 * What a store holds, for a test that timed out waiting on it: each execution's status, wake time
 * and the types of the last `tail` events of its log, one line each, the newest `limit`
 * executions. Pass it to {@link until} as its `describe`.
 */
export async function logTails(store: EventStore, limit = 12, tail = 6): Promise<string> {
  const executions = (await store.findExecutions({})).slice(-limit);
  if (executions.length === 0) return '(no executions in the store)';
  const lines: string[] = [];
  for (const execution of executions) {
    const events = await store.read(execution.executionId);
    const types = events.slice(-tail).map((event) => `${event.sequence}:${event.type}`);
    const wake = execution.wakeAtMs === null ? '' : ` wake ${execution.wakeAtMs}`;
    lines.push(`${execution.executionId} ${execution.status}${wake}: … ${types.join(' ')}`);
  }
  return lines.join('\n');
}
