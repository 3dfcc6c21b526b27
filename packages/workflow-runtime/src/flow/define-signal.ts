import { LoomError, WorkflowErrorCode } from '../errors.js';
import { isStandardSchema, type StandardSchemaV1 } from './standard-schema.js';

/**
 * A signal with a name and a payload schema, made with {@link defineSignal}: senders that pass it
 * to `runtime.signal` get the payload type-checked against the schema's input type, and checked
 * by the schema at run time before anything is written.
 */
export interface SignalDefinition<
  N extends string = string,
  S extends StandardSchemaV1 = StandardSchemaV1,
> {
  readonly kind: 'signal';
  readonly name: N;
  readonly schema: S;
}

/** The kernel's `signalNameLengthMax`. */
const signalNameLengthMax = 200;

/**
 * Define a typed signal: a name and the schema of its payload. Send it with
 * `runtime.signal(definition, executionId, payload)`; declare it on the flow that waits for it with
 * `signals: { [definition.name]: definition.schema }`.
 *
 * Error codes: `INVALID_ARGUMENT` for an empty or over-long name (200 characters) or a value that
 * is not a Standard Schema.
 *
 * @example
 * const approval = defineSignal('approve', z.object({ by: z.string() }));
 * await runtime.signal(approval, 'order-42', { by: 'ada' });
 */
export function defineSignal<N extends string, S extends StandardSchemaV1>(
  name: N,
  schema: S,
): SignalDefinition<N, S> {
  if (
    typeof name !== 'string' ||
    name.length === 0 ||
    name.length > signalNameLengthMax ||
    name.includes(String.fromCharCode(0))
  ) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `a signal name must be 1 to 200 characters without NUL, got ${JSON.stringify(name)}`,
      { actual: name },
    );
  }
  if (!isStandardSchema(schema)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `signal '${name}' needs a Standard Schema (zod, valibot, arktype, …) for its payload`,
      { signal: name },
    );
  }
  return { kind: 'signal', name, schema };
}

/** True for a value made by {@link defineSignal}. */
export function isSignalDefinition(value: unknown): value is SignalDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'signal' &&
    typeof (value as { name?: unknown }).name === 'string'
  );
}
