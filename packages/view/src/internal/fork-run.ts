import { forkReruns } from '@loom/agent-loop';
import type { Backend, JsonValue, StoredEvent, StoredSignal } from '@loom/event-runtime';
import { LoomError, ViewErrorCode } from '../errors.js';
import { readInbox, readLog } from './read-log.js';

const terminalTypes: ReadonlySet<string> = new Set([
  'execution.completed',
  'execution.failed',
  'execution.cancelled',
  'execution.continued_as_new',
]);

/** Links a started event copies from its original that a fork must not keep. */
const originalLinks = ['parent', 'continuedFrom', 'rootId', 'generation'] as const;

/** `Operator.fork`'s options. */
export interface ForkOptions {
  atSequence: number;
  by: string;
  newId?: string;
  /**
   * Fork even though the fork would run an approved non-rerunnable call again (under a new
   * idempotency key) without asking anyone. Without it such a fork is `FORK_WOULD_RERUN`.
   */
  allowRerun?: boolean;
}

/**
 * `Operator.fork`: copies the log of `executionId` up to `atSequence` under a new id, and the
 * inbox signals that part of the log took (and those before them), so the fork's approvals list
 * as its log decided them and its signal ids line up with the ids its log consumed.
 */
export async function forkRun(
  backend: Backend,
  executionId: string,
  options: ForkOptions,
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
  const inbox = inboxUpTo(await readInbox(backend.events, executionId), kept);
  const reruns = forkReruns(kept, inbox);
  if (reruns.length > 0 && options.allowRerun !== true) {
    const named = reruns.map((r) => `'${r.tool}' (${r.sideEffect}, ${r.approvalId})`).join(', ');
    throw new LoomError(
      ViewErrorCode.FORK_WOULD_RERUN,
      `a fork of ${executionId} at ${atSequence} would call ${named} again, approved in the original, without asking anyone and under a new idempotency key: fork at a sequence before the approval's decision, or pass allowRerun (--allow-rerun) to fork anyway`,
      { executionId, atSequence, calls: reruns.map((r) => ({ ...r })) },
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
  for (const signal of inbox) {
    const sent = await backend.events.sendSignal({
      executionId: newId,
      name: signal.name,
      payload: signal.payload,
      ...(signal.idempotencyKey === null ? {} : { idempotencyKey: signal.idempotencyKey }),
    });
    // Ids are 1, 2, 3, … per execution in arrival order: the copy gets the original's.
    if (sent.signalId !== signal.signalId) {
      throw new Error(
        `fork ${newId}: inbox signal ${signal.signalId} of ${executionId} was copied as ${sent.signalId}`,
      );
    }
  }
  return newId;
}

/**
 * The original's inbox up to the newest signal the kept log took: every signal that had arrived
 * by then (ids are in arrival order), none that came after the cut.
 */
function inboxUpTo(inbox: readonly StoredSignal[], kept: readonly StoredEvent[]): StoredSignal[] {
  let newest = 0;
  for (const event of kept) {
    if (event.type !== 'signal.received') continue;
    const { signalId } = event.payload as { signalId?: unknown };
    if (typeof signalId === 'number' && signalId > newest) newest = signalId;
  }
  return inbox.filter((signal) => signal.signalId <= newest);
}
