import { LoomError, WorkflowErrorCode } from '../errors.js';
import { isStandardSchema, type StandardSchemaV1 } from './standard-schema.js';

/**
 * A query made with {@link defineQuery}: a name, and optionally schemas of its argument and its
 * result. A flow answers it with `ctx.onQuery(query, handler)`; a caller asks with
 * `runtime.query(query, executionId, arg)`.
 */
export interface QueryDefinition<N extends string = string, A = unknown, R = unknown> {
  readonly kind: 'query';
  readonly name: N;
  readonly arg: StandardSchemaV1<A> | undefined;
  readonly result: StandardSchemaV1<R> | undefined;
}

/** The longest query or update name (as a signal name: the kernel's `signalNameLengthMax`, less the update prefix). */
export const handlerNameLengthMax = 180;

/**
 * Define a typed query: it reads a running (or finished) execution's state and writes nothing.
 * `arg` and `result` are optional Standard Schemas (zod, valibot, arktype, …): the argument is
 * checked before the flow is asked (`INVALID_QUERY`), the result after.
 *
 * Error codes: `INVALID_ARGUMENT` for an empty or over-long name (180 characters) or a schema
 * that is not a Standard Schema.
 *
 * @example
 * const progress = defineQuery<void, { done: number }>('progress');
 * // in the flow: ctx.onQuery(progress, () => ({ done }));
 * const { done } = await runtime.query(progress, 'import-7');
 */
export function defineQuery<A = void, R = unknown, N extends string = string>(
  name: N,
  options: { arg?: StandardSchemaV1<A>; result?: StandardSchemaV1<R> } = {},
): QueryDefinition<N, A, R> {
  checkHandlerName('query', name);
  checkSchemas('query', name, options);
  return { kind: 'query', name, arg: options.arg, result: options.result };
}

/** True for a value made by {@link defineQuery}. */
export function isQueryDefinition(value: unknown): value is QueryDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'query' &&
    typeof (value as { name?: unknown }).name === 'string'
  );
}

/** A query or update name: 1 to {@link handlerNameLengthMax} characters without NUL, else INVALID_ARGUMENT. */
export function checkHandlerName(what: 'query' | 'update', name: unknown): void {
  if (
    typeof name !== 'string' ||
    name.length === 0 ||
    name.length > handlerNameLengthMax ||
    name.includes(String.fromCharCode(0))
  ) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `a${what === 'update' ? 'n' : ''} ${what} name must be 1 to ${handlerNameLengthMax} characters without NUL, got ${JSON.stringify(name)}`,
      { actual: typeof name === 'string' ? name : String(name), path: 'name' },
    );
  }
}

/** Each given schema (`arg`, `result`) must be a Standard Schema, else INVALID_ARGUMENT. */
export function checkSchemas(
  what: 'query' | 'update',
  name: string,
  options: { arg?: unknown; result?: unknown },
): void {
  if (typeof options !== 'object' || options === null) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `${what} '${name}' takes an options object ({ arg?, result? })`,
      { path: 'options' },
    );
  }
  for (const path of ['arg', 'result'] as const) {
    const schema = options[path];
    if (schema !== undefined && !isStandardSchema(schema)) {
      throw new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        `${what} '${name}' needs a Standard Schema (zod, valibot, arktype, …) for its ${path}`,
        { [what]: name, path },
      );
    }
  }
}
