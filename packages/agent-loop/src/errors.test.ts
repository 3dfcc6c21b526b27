import { readFileSync } from 'node:fs';
import { LoomError as KernelLoomError } from '@loom/event-runtime';
import { describe, expect, it } from 'vitest';
import { AgentErrorCode, LoomError } from './errors.js';

describe('errors', () => {
  it("the agent loop's LoomError is the kernel's class itself", () => {
    expect(LoomError).toBe(KernelLoomError);
  });

  it('codes are their own names, and unique', () => {
    const codes = Object.entries(AgentErrorCode);
    for (const [key, value] of codes) expect(value).toBe(key);
    expect(new Set(Object.values(AgentErrorCode)).size).toBe(codes.length);
  });

  it('docs/errors.md lists every code of this package, under its heading', () => {
    const docs = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
    const start = docs.indexOf('## `@loom/agent-loop` (`AgentErrorCode`)');
    expect(start).toBeGreaterThanOrEqual(0);
    const next = docs.indexOf('\n## ', start + 1);
    const section = docs.slice(start, next === -1 ? undefined : next);
    for (const code of Object.values(AgentErrorCode)) expect(section).toContain(`| \`${code}\` |`);
  });
});
