import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { prompt } from './triage.js';

describe('the README example', () => {
  it('is the code of examples/triage.ts, word for word', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const example = readFileSync(new URL('./triage.ts', import.meta.url), 'utf8');
    const block = /## Example\n[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBe(example);
  });

  it('drops the older step, keeps the newest, and fits the budget', () => {
    expect(prompt.messages).toEqual([
      { role: 'system', content: 'You triage support tickets. Be brief.' },
      { role: 'user', content: 'Triage ticket 4521.' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ callId: 'c2', tool: 'refund', input: { id: 4521, amountCents: 12_000 } }],
      },
      {
        role: 'tool',
        callId: 'c2',
        tool: 'refund',
        content: 'Denied: refunds over 100 EUR need approval',
        isError: true,
      },
    ]);
    expect(prompt.dropped).toEqual([
      { kind: 'history_step', path: [3], step: 0, priority: 1, tokens: 30 },
    ]);
    expect(prompt.tools.map((tool) => tool.name)).toEqual(['refund']);
    expect(prompt.tokens).toBe(68);
  });
});
