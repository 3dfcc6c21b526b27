import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { inTheLog, missing, readBack, verified } from './large-observations.js';

describe('the README example', () => {
  it('is the code of examples/large-observations.ts, word for word', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const example = readFileSync(new URL('./large-observations.ts', import.meta.url), 'utf8');
    const block = /## Example\n[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBe(example);
  });

  it('keeps a reference in the log, reads the content back, then shows the marker and verifies', () => {
    expect(inTheLog).toEqual({
      tool: 'sql',
      observation: { $content: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), bytes: 300_002 },
    });
    expect(readBack).toBe(300_000);
    expect(missing).toBe(true);
    expect(verified).toBe(true);
  });
});
