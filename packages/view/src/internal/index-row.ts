import type { EventStore, ExecutionSummary } from '@loom/event-runtime';
import { LoomError, ViewErrorCode } from '../errors.js';

/** `RUN_NOT_FOUND` for `executionId`, with what to do next. */
export function runNotFound(executionId: string): LoomError {
  return new LoomError(
    ViewErrorCode.RUN_NOT_FOUND,
    `no execution '${executionId}' in this database: list them with 'loom runs'`,
    { executionId },
  );
}

/** The greatest string before `id` in the index's order (UTF-16 code units). */
function predecessor(id: string): string {
  if (id === '') return id;
  const last = id.charCodeAt(id.length - 1);
  return last === 0 ? id.slice(0, -1) : `${id.slice(0, -1)}${String.fromCharCode(last - 1)}\uffff`;
}

/** One execution's index row in one query, or `RUN_NOT_FOUND`. */
export async function indexRow(events: EventStore, executionId: string): Promise<ExecutionSummary> {
  // The index is ordered by id: the first row after the id's predecessor is the id itself, if any.
  const [row] = await events.findExecutions({
    limit: 1,
    afterExecutionId: predecessor(executionId),
  });
  if (row === undefined || row.executionId !== executionId) throw runNotFound(executionId);
  return row;
}
