import { LoomError, WorkflowErrorCode } from '../errors.js';

/** What an effect handler gets besides its input, locally or on a remote worker. */
export interface EffectCallContext {
  /** The calling step's `executionId/stepIndex`: the same on every attempt, for deduplication. */
  readonly idempotencyKey: string;
  /** The calling step's attempt (1, 2, …), counted from the caller's log. */
  readonly attempt: number;
  /** Fires when the caller gives up on this call (cancel, lost lease, timeout, disconnect). */
  readonly signal: AbortSignal;
}

/** A named effect: a handler any process can register and any caller can place by name. */
export interface EffectDefinition<I = unknown, O = unknown> {
  readonly name: string;
  readonly handler: (input: I, context: EffectCallContext) => O | Promise<O>;
}

const namePattern = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/;

/**
 * Define a named effect whose input and result are JSON (checked when they are sent or journaled), so it can run in this process or be
 * sent to a remote worker (`serveEffects`) and its result journaled in the caller's log. The
 * same definition is registered by the caller (`PlacementDispatcher({ effects })`, to run it
 * locally when this node fits) and by the remote worker (`serveEffects({ effects })`).
 *
 * Error codes: `INVALID_ARGUMENT` for a bad name (1 to 200 of `[A-Za-z0-9._:/-]`) or handler.
 *
 * @example
 * const embed = defineEffect('embed', async (input: { text: string }) => ({ length: input.text.length }));
 */
export function defineEffect<I, O>(
  name: string,
  handler: (input: I, context: EffectCallContext) => O | Promise<O>,
): EffectDefinition<I, O> {
  if (typeof name !== 'string' || !namePattern.test(name)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `effect name ${JSON.stringify(name)} must be 1 to 200 characters of [A-Za-z0-9._:/-]`,
      { path: 'name', actual: String(name) },
    );
  }
  if (typeof handler !== 'function') {
    throw new LoomError(WorkflowErrorCode.INVALID_ARGUMENT, `effect '${name}' needs a handler`, {
      path: 'handler',
    });
  }
  return Object.freeze({ name, handler: handler as EffectDefinition<I, O>['handler'] });
}
