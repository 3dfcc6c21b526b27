import { expect } from 'vitest';
import { isLoomError, MiddlewareErrorCode } from '../errors.js';

/** Asserts that `build` throws `INVALID_ARGUMENT` naming `option` (in `fields` and message). */
export function expectInvalidOption(build: () => unknown, option: string): void {
  let thrown: unknown;
  try {
    build();
  } catch (error) {
    thrown = error;
  }
  expect(
    isLoomError(thrown, MiddlewareErrorCode.INVALID_ARGUMENT),
    `expected INVALID_ARGUMENT for ${option}`,
  ).toBe(true);
  const error = thrown as { fields: { option?: unknown }; message: string };
  expect(error.fields.option).toBe(option);
  expect(error.message).toContain(`'${option}'`);
}
