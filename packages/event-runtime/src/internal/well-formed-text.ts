import { LoomError } from '../errors.js';

/**
 * The index of the first code unit that makes `text` unfit to be a key, a name or a column: a
 * lone UTF-16 surrogate or NUL. -1 when there is none.
 *
 * Why both: a lone surrogate has no UTF-8 form, so Postgres and SQLite store U+FFFD (or change
 * the string) and two ids become one execution, or an id reads back as another; NUL is text
 * Postgres refuses while memory and SQLite keep it, so the same call would differ by backend.
 */
export function illFormedAt(text: string): number {
  // The native check (Node 20) answers the common case; the scan below only locates the unit.
  if ((text as unknown as WellFormedString).isWellFormed() && !text.includes('\0')) return -1;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit === 0) return index;
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        index += 1;
        continue;
      }
      return index;
    }
    if (unit >= 0xdc00 && unit <= 0xdfff) return index;
  }
  return -1;
}

/** `String.prototype.isWellFormed` is ES2024; the build's lib is ES2023, the runtime Node 20. */
interface WellFormedString {
  isWellFormed(): boolean;
}

/**
 * Returns `text` when it has no lone surrogate and no NUL; otherwise throws a `LoomError` with
 * `code`, naming the field (`path`) and the offending code unit's index (`fields.position`).
 */
export function checkWellFormed<Code extends string>(
  text: string,
  path: string,
  code: Code,
  fields: Record<string, unknown> = {},
): string {
  const position = illFormedAt(text);
  if (position === -1) return text;
  const unit = text.charCodeAt(position);
  const actual = `U+${unit.toString(16).toUpperCase().padStart(4, '0')}`;
  const message =
    unit === 0
      ? `${path} has a NUL character at code unit ${position}, which PostgreSQL cannot store: ` +
        'remove it (ids, names and keys must be text without NUL)'
      : `${path} has a lone UTF-16 surrogate (${actual}) at code unit ${position}: it has no ` +
        'UTF-8 form, so a database would store it changed (as U+FFFD) and two different ids ' +
        'could become one: pass well-formed text (encode binary ids as hex or base64)';
  throw new LoomError(code, message, { ...fields, path, position, actual });
}
