import type { Backend, JsonValue } from '@loom/event-runtime';
import { LoomError, ViewErrorCode } from '../errors.js';
import { readLog } from './read-log.js';

const terminalTypes: ReadonlySet<string> = new Set([
  'execution.completed',
  'execution.failed',
  'execution.cancelled',
  'execution.continued_as_new',
]);

/** Links a started event copies from its original that a fork must not keep. */
const originalLinks = ['parent', 'continuedFrom', 'rootId', 'generation'] as const;

/** `Operator.fork`: copies the log of `executionId` up to `atSequence` under a new id. */
export async function forkRun(
  backend: Backend,
  executionId: string,
  options: { atSequence: number; by: string; newId?: string },
): Promise<string> {
  const { atSequence, by } = options;
  if (!Number.isSafeInteger(atSequence) || atSequence < 0) {
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      `--at is a sequence of the run's log (0 or more), got ${atSequence}`,
      { path: 'atSequence', actual: atSequence },
    );
  }
  const log = await readLog(backend.events, executionId);
  if (log.length === 0) {
    throw new LoomError(ViewErrorCode.RUN_NOT_FOUND, `no run ${executionId} in this database`, {
      executionId,
    });
  }
  const kept = log.slice(0, atSequence + 1);
  const last = kept[kept.length - 1];
  if (atSequence >= log.length || (last !== undefined && terminalTypes.has(last.type))) {
    const ending = log.findIndex((event) => terminalTypes.has(event.type));
    const before = ending === -1 ? log.length - 1 : ending - 1;
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      `fork ${executionId} at a sequence before its ending: 0 to ${before} (its log has ${log.length} events)`,
      { path: 'atSequence', actual: atSequence, last: before },
    );
  }
  const newId = options.newId ?? `fork-${atSequence}-of-${executionId}`;
  const started = { ...(kept[0]?.payload as Record<string, JsonValue>) };
  for (const link of originalLinks) delete started[link];
  started.forkedFrom = { executionId, sequence: atSequence, by };
  await backend.events.append(
    kept.map((event, index) => ({
      executionId: newId,
      sequence: event.sequence,
      type: event.type,
      payload: index === 0 ? started : event.payload,
      at: event.at,
    })),
  );
  return newId;
}
