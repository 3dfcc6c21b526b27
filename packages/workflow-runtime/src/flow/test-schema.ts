import type { StandardSchemaV1 } from './standard-schema.js';

/**
 * A tiny Standard Schema for tests (the real thing would be zod, valibot, …): checks with a
 * predicate and optionally transforms. Lives beside the tests, never exported from the package.
 */
export function testSchema<T>(
  check: (value: unknown) => string | undefined,
  transform: (value: unknown) => T = (value) => value as T,
): StandardSchemaV1<unknown, T> {
  return {
    '~standard': {
      version: 1,
      vendor: 'loom-test',
      validate: (value) => {
        const problem = check(value);
        return problem === undefined
          ? { value: transform(value) }
          : { issues: [{ message: problem, path: ['value'] }] };
      },
    },
  };
}
