import { LoomError, WorkflowErrorCode } from '../errors.js';
import { checkHandlerName, checkSchemas } from './define-query.js';
import type { StandardSchemaV1 } from './standard-schema.js';

/**
 * Refuses an update before anything is written: return (or resolve) a message saying why, or
 * nothing to accept it. It sees only the argument (after its schema), never the flow's state.
 */
export type UpdateValidator<A> = (arg: A) => string | undefined | Promise<string | undefined>;

/**
 * An update made with {@link defineUpdate}: a journaled request the flow takes with
 * `ctx.waitForUpdate(update)` and answers once; the caller sends it with
 * `runtime.update(update, executionId, arg, { updateId })` and gets the answer.
 */
export interface UpdateDefinition<N extends string = string, A = unknown, R = unknown> {
  readonly kind: 'update';
  readonly name: N;
  readonly arg: StandardSchemaV1<A> | undefined;
  readonly result: StandardSchemaV1<R> | undefined;
  readonly validate: UpdateValidator<A> | undefined;
}

/**
 * The inbox signal name that carries updates named `name`: a prefix no `defineSignal` name of a
 * flow author is expected to take (ADR 0061).
 */
export function updateSignalName(name: string): string {
  return `loom.update:${name}`;
}

/** The name of the step that journals the answer to update `updateId`. */
export function updateAnswerStep(updateId: string): string {
  return `loom.update:${updateId}`;
}

/** The longest update id (a step name, with its prefix, stays within the kernel's 200). */
export const updateIdLengthMax = 180;

/**
 * Define a typed update: a request a running execution handles and answers, journaled so the
 * answer survives a crash of the process that drives it. `arg` (a Standard Schema) and
 * `validate` run in the caller before anything is written: a refusal is `INVALID_UPDATE`.
 * `result`, when given, checks the flow's answer as the caller receives it.
 *
 * Error codes: `INVALID_ARGUMENT` for an empty or over-long name (180 characters), a schema that
 * is not a Standard Schema, or a `validate` that is not a function.
 *
 * @example
 * const addItem = defineUpdate<{ sku: string }, { count: number }>('add-item', {
 *   validate: (arg) => (arg.sku.length === 0 ? 'sku is empty' : undefined),
 * });
 * const { count } = await runtime.update(addItem, 'cart-7', { sku: 'loom-1' }, { updateId: 'req-1' });
 */
export function defineUpdate<A = void, R = unknown, N extends string = string>(
  name: N,
  options: {
    arg?: StandardSchemaV1<A>;
    result?: StandardSchemaV1<R>;
    validate?: UpdateValidator<A>;
  } = {},
): UpdateDefinition<N, A, R> {
  checkHandlerName('update', name);
  checkSchemas('update', name, options);
  if (options.validate !== undefined && typeof options.validate !== 'function') {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `update '${name}' needs a function for validate, got ${typeof options.validate}`,
      { update: name, path: 'validate' },
    );
  }
  return {
    kind: 'update',
    name,
    arg: options.arg,
    result: options.result,
    validate: options.validate,
  };
}

/** True for a value made by {@link defineUpdate}. */
export function isUpdateDefinition(value: unknown): value is UpdateDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'update' &&
    typeof (value as { name?: unknown }).name === 'string'
  );
}
