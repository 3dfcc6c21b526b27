/**
 * The Standard Schema interface (https://standardschema.dev), copied as its authors ask so that
 * any compliant validator (zod, valibot, arktype, …) works without a dependency on any of them.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

export type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<StandardIssue> };

export interface StandardIssue {
  readonly message: string;
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}

/** The input type of a schema: what a caller hands it (the Standard Schema `InferInput`). */
export type InferInput<S extends StandardSchemaV1> = NonNullable<S['~standard']['types']>['input'];

/** The output type of a schema. */
export type InferOutput<S> = S extends StandardSchemaV1<unknown, infer O> ? O : never;

/** Validation outcome with the issues rendered as one readable line. */
export type Validated<T> =
  | { ok: true; value: T }
  | { ok: false; message: string; issues: string[] };

/** Runs a schema; renders issues as `path: message`. */
export async function validate<T>(
  schema: StandardSchemaV1<unknown, T>,
  value: unknown,
): Promise<Validated<T>> {
  let result = schema['~standard'].validate(value);
  if (result instanceof Promise) result = await result;
  if (result.issues === undefined) return { ok: true, value: result.value };
  const issues = result.issues.map((issue) => {
    const path = (issue.path ?? [])
      .map((segment) =>
        String(typeof segment === 'object' && segment !== null ? segment.key : segment),
      )
      .join('.');
    return path.length > 0 ? `${path}: ${issue.message}` : issue.message;
  });
  return { ok: false, message: issues.join('; '), issues };
}

/** True for anything that looks like a Standard Schema. */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { '~standard'?: { validate?: unknown } })['~standard']?.validate === 'function'
  );
}
