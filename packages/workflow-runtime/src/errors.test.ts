import { readFileSync } from 'node:fs';
import { LoomError as KernelLoomError } from '@loom/event-runtime';
import { describe, expect, it } from 'vitest';
import { LoomError, WorkflowErrorCode } from './errors.js';

describe('errors', () => {
  it("the workflow layer's LoomError is the kernel's class itself", () => {
    expect(LoomError).toBe(KernelLoomError);
  });

  it('codes are their own names, and unique', () => {
    const codes = Object.entries(WorkflowErrorCode);
    for (const [key, value] of codes) expect(value).toBe(key);
    expect(new Set(Object.values(WorkflowErrorCode)).size).toBe(codes.length);
  });

  it('docs/errors.md lists every code of this package, under its heading', () => {
    const docs = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
    const start = docs.indexOf('## `@loom/workflow-runtime`');
    expect(start).toBeGreaterThanOrEqual(0);
    const next = docs.indexOf('\n## ', start + 1);
    const section = docs.slice(start, next === -1 ? undefined : next);
    for (const code of Object.values(WorkflowErrorCode))
      expect(section).toContain(`| \`${code}\` |`);
  });
});
