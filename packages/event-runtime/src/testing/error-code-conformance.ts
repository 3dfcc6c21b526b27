import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';

/** What {@link errorCodeConformance} checks for one package's code list. */
export interface ErrorCodeConformanceOptions {
  /** The package's code list, e.g. `WorkflowErrorCode`. */
  codes: Readonly<Record<string, string>>;
  /** The start of the package's heading in the errors page, e.g. "## `@loom/view`". */
  heading: string;
  /** Where the errors page is (`docs/errors.md` of the repository). */
  docs: URL;
}

/**
 * The checks every package's code list passes, as `it` blocks for the caller's `describe`: each
 * code is its own name, codes are unique, and the errors page lists every code as a table row
 * (`| \`CODE\` |`) under the package's heading.
 */
export function errorCodeConformance({ codes, heading, docs }: ErrorCodeConformanceOptions): void {
  it('codes are their own names, and unique', () => {
    const entries = Object.entries(codes);
    for (const [key, value] of entries) expect(value).toBe(key);
    expect(new Set(Object.values(codes)).size).toBe(entries.length);
  });

  it('docs/errors.md lists every code of this package, under its heading', () => {
    const page = readFileSync(docs, 'utf8');
    const start = page.indexOf(heading);
    expect(start).toBeGreaterThanOrEqual(0);
    const next = page.indexOf('\n## ', start + 1);
    const section = page.slice(start, next === -1 ? undefined : next);
    for (const code of Object.values(codes)) expect(section).toContain(`| \`${code}\` |`);
  });
}
