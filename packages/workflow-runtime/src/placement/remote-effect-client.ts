import type { Clock } from '@loom/event-runtime';
import { terminalError } from '@loom/middleware';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import { PlacementLimits } from './placement.js';

/** A worker process that serves effects over HTTP (`serveEffects`), as a dispatcher sees it. */
export interface RemoteWorker {
  /** The name placements use (`{ remote: 'gpu-1' }`) and errors report. */
  name: string;
  /** Base URL of its effect server, e.g. `http://10.0.0.7:7400`. */
  url: string;
  /** What it can do: a `{ tags }` placement picks remotes that carry every tag. */
  tags?: readonly string[];
  /** Give up on one call after this long (`REMOTE_UNAVAILABLE`, reason `timeout`). Default 30 s. */
  timeoutMs?: number;
}

/** One call of a remote effect: what goes over the wire besides the input. */
export interface RemoteCall {
  effect: string;
  input: unknown;
  idempotencyKey: string;
  attempt: number;
  signal: AbortSignal | undefined;
  clock: Clock;
}

/** The path of an effect on a worker's server. */
export function effectPath(effect: string): string {
  return `/loom/effects/${encodeURIComponent(effect)}`;
}

/**
 * POSTs one call to `remote` and returns the effect's result. Every failure is a typed
 * `LoomError` the step's retry policy judges: `REMOTE_UNAVAILABLE` (no connection, reset, the
 * remote died mid-call, timeout), `REMOTE_UNKNOWN` (404: no such effect there),
 * `REMOTE_BAD_RESPONSE`, `REMOTE_EFFECT_FAILED`, or `TERMINAL` when the remote handler threw a
 * `terminalError()`.
 */
export async function callRemote(remote: RemoteWorker, call: RemoteCall): Promise<unknown> {
  const facts = { remote: remote.name, effect: call.effect, idempotencyKey: call.idempotencyKey };
  const timeoutMs = remote.timeoutMs ?? PlacementLimits.remoteTimeoutMsDefault;
  const controller = new AbortController();
  let timedOut = false;
  const cancelTimer = call.clock.setTimer(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const onAbort = () => controller.abort();
  call.signal?.addEventListener('abort', onAbort, { once: true });
  let status: number;
  let text: string;
  let tooLarge = false;
  try {
    const body = JSON.stringify({ input: call.input ?? null });
    const response = await fetch(new URL(effectPath(call.effect), remote.url), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'loom-idempotency-key': call.idempotencyKey,
        'loom-attempt': String(call.attempt),
      },
      body,
      signal: controller.signal,
    });
    status = response.status;
    // Refused before reading when the remote announces a body past the limit.
    const announced = Number(response.headers.get('content-length') ?? '0');
    if (announced > PlacementLimits.responseBytesMax) {
      await response.body?.cancel();
      text = '';
      tooLarge = true;
    } else {
      text = await response.text();
    }
  } catch (error) {
    const reason = timedOut
      ? 'timeout'
      : call.signal?.aborted === true
        ? 'aborted'
        : causeCode(error);
    throw new LoomError(
      WorkflowErrorCode.REMOTE_UNAVAILABLE,
      `remote '${remote.name}' (${remote.url}) did not answer effect '${call.effect}' ` +
        `(${reason}${timedOut ? ` after ${timeoutMs} ms` : ''}): the step's retry policy decides ` +
        'what follows, and a retry carries the same idempotency key',
      { ...facts, reason },
      error,
    );
  } finally {
    cancelTimer();
    call.signal?.removeEventListener('abort', onAbort);
  }
  return readAnswer(remote, call, status, tooLarge ? undefined : text);
}

/** The effect's result from the remote's answer (`text` undefined: over the size limit). */
function readAnswer(
  remote: RemoteWorker,
  call: RemoteCall,
  status: number,
  text: string | undefined,
): unknown {
  const facts = { remote: remote.name, effect: call.effect, status };
  const bad = (reason: string) =>
    new LoomError(
      WorkflowErrorCode.REMOTE_BAD_RESPONSE,
      `remote '${remote.name}' answered effect '${call.effect}' with HTTP ${status} and ${reason}: ` +
        'is its URL a Loom effect server (serveEffects), with no proxy rewriting the body?',
      { ...facts, reason },
    );
  if (text === undefined || text.length > PlacementLimits.responseBytesMax)
    throw bad('a body over responseBytesMax');
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    throw bad('a body that is not JSON');
  }
  if (typeof answer !== 'object' || answer === null) throw bad('a body that is not an object');
  const fields = answer as { result?: unknown; error?: unknown };
  if (status === 200) {
    if (!('result' in fields)) throw bad('no result');
    return fields.result;
  }
  const error = fields.error as { name?: unknown; message?: unknown; code?: unknown } | undefined;
  if (typeof error !== 'object' || error === null || typeof error.message !== 'string')
    throw bad('no error object');
  if (status === 404) {
    throw new LoomError(
      WorkflowErrorCode.REMOTE_UNKNOWN,
      `remote '${remote.name}' has no handler for effect '${call.effect}': register it in its serveEffects({ effects })`,
      facts,
    );
  }
  if (status === 500) {
    const remoteCode = typeof error.code === 'string' ? error.code : undefined;
    const remoteName = typeof error.name === 'string' ? error.name : 'Error';
    const where = { ...facts, remoteName, ...(remoteCode === undefined ? {} : { remoteCode }) };
    if (remoteCode === 'TERMINAL') throw terminalError(error.message, where);
    throw new LoomError(
      WorkflowErrorCode.REMOTE_EFFECT_FAILED,
      `effect '${call.effect}' failed on remote '${remote.name}': ${error.message}`,
      where,
    );
  }
  throw bad(`the error ${JSON.stringify(error.message)}`);
}

/** The system error code under a failed fetch (`ECONNREFUSED`, `ECONNRESET`, …). */
function causeCode(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return error instanceof Error ? error.message : 'fetch failed';
}
