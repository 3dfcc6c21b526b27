import { type Schema, Validator } from '@cfworker/json-schema';
import type { JsonSchema } from '@loom/reasoning';
import { AgentErrorCode, LoomError } from '../errors.js';

/** The parts of Standard Schema v1 (https://standardschema.dev) this package reads. */
export interface StandardSchemaLike {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    /** Type-level only: what `validate` gives back. */
    readonly types?: { readonly input: unknown; readonly output: unknown } | undefined;
    readonly validate: (value: unknown) =>
      | { readonly value: unknown; readonly issues?: undefined }
      | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: unknown }> }
      | Promise<
          | { readonly value: unknown; readonly issues?: undefined }
          | {
              readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: unknown }>;
            }
        >;
    /** Standard JSON Schema: zod 4, arktype and others convert themselves. */
    readonly jsonSchema?: {
      readonly input: (options: { readonly target: string }) => Record<string, unknown>;
    };
  };
}

/** What checks a tool's input: the JSON Schema the model sees and a validator. */
export interface CompiledInput {
  readonly jsonSchema: JsonSchema;
  /** Undefined when the input is valid, else a message the model can act on. */
  check(input: unknown): Promise<string | undefined>;
}

function isStandardSchema(input: unknown): input is StandardSchemaLike {
  return (
    typeof input === 'object' &&
    input !== null &&
    '~standard' in input &&
    typeof (input as StandardSchemaLike)['~standard']?.validate === 'function'
  );
}

const draftOf: Record<string, '4' | '7' | '2019-09' | '2020-12'> = {
  'http://json-schema.org/draft-04/schema#': '4',
  'http://json-schema.org/draft-07/schema#': '7',
  'https://json-schema.org/draft/2019-09/schema': '2019-09',
  'https://json-schema.org/draft/2020-12/schema': '2020-12',
};

/**
 * Compiles a tool's `input`: a Standard Schema (its own JSON Schema conversion for the model,
 * its own `validate` for the check) or a JSON Schema object (checked with @cfworker/json-schema).
 * Throws `INVALID_ARGUMENT` for anything else.
 */
export function compileInput(
  tool: string,
  input: unknown,
  jsonSchema: JsonSchema | undefined,
  /** Who the schema is for, in messages; default `tool '<tool>'`. */
  subject = `tool '${tool}'`,
  /** The options' names, in messages. */
  names: { schema: string; jsonSchema: string } = { schema: 'input', jsonSchema: 'jsonSchema' },
): CompiledInput {
  if (isStandardSchema(input)) {
    const standard = input['~standard'];
    let schema = jsonSchema;
    if (schema === undefined) {
      if (standard.jsonSchema === undefined) {
        throw new LoomError(
          AgentErrorCode.INVALID_ARGUMENT,
          `${subject}: its ${standard.vendor} schema cannot convert itself to JSON Schema (no Standard JSON Schema support): pass the JSON Schema the model should see as '${names.jsonSchema}'`,
          { tool },
        );
      }
      schema = standard.jsonSchema.input({ target: 'draft-2020-12' }) as JsonSchema;
    }
    return {
      jsonSchema: schema,
      async check(value) {
        const result = await standard.validate(value);
        if (result.issues === undefined) return undefined;
        return result.issues
          .map((issue) => {
            const path = Array.isArray(issue.path)
              ? issue.path
                  .map((p: unknown) =>
                    typeof p === 'object' && p !== null && 'key' in p
                      ? String((p as { key: unknown }).key)
                      : String(p),
                  )
                  .join('.')
              : '';
            return path === '' ? issue.message : `${path}: ${issue.message}`;
          })
          .join('; ');
      },
    };
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `${subject}: '${names.schema}' must be a Standard Schema (zod, valibot, arktype, …) or a JSON Schema object`,
      { tool },
    );
  }
  const schema = input as Schema;
  const declared = typeof schema.$schema === 'string' ? draftOf[schema.$schema] : undefined;
  let validator: Validator;
  try {
    validator = new Validator(schema, declared ?? '2020-12', false);
  } catch (cause) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `${subject}: its JSON Schema does not compile: ${(cause as Error).message}`,
      { tool },
      cause,
    );
  }
  return {
    jsonSchema: (jsonSchema ?? input) as JsonSchema,
    async check(value) {
      const result = validator.validate(value);
      if (result.valid) return undefined;
      // The innermost errors name the offending field; the outer ones repeat it.
      const errors = result.errors.filter((e) => e.keyword !== 'properties');
      return (errors.length > 0 ? errors : result.errors)
        .map((e) => `${e.instanceLocation}: ${e.error}`)
        .join('; ');
    },
  };
}
