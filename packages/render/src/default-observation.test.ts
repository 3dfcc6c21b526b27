import { describe, expect, it } from 'vitest';
import { defaultObservation } from './default-observation.js';
import { isLoomError, RenderErrorCode } from './errors.js';

describe('defaultObservation', () => {
  it('renders a string result as is, other JSON as JSON, failures with a prefix', () => {
    expect(defaultObservation({ kind: 'tool_result', callId: 'c', content: 'plain' })).toBe(
      'plain',
    );
    expect(
      defaultObservation({ kind: 'tool_result', callId: 'c', content: { hits: [1, 2] } }),
    ).toBe('{"hits":[1,2]}');
    expect(defaultObservation({ kind: 'tool_result', callId: 'c', content: null })).toBe('null');
    expect(defaultObservation({ kind: 'tool_error', callId: 'c', message: 'ENOENT' })).toBe(
      'Error: ENOENT',
    );
    expect(defaultObservation({ kind: 'denied', callId: 'c', reason: 'destructive' })).toBe(
      'Denied: destructive',
    );
    expect(defaultObservation({ kind: 'invalid_decision', message: 'no tool call' })).toBe(
      'Invalid decision: no tool call',
    );
  });

  it('truncates long content and says how much was cut', () => {
    const content = 'a'.repeat(100);
    const text = defaultObservation(
      { kind: 'tool_result', callId: 'c', content },
      { maxChars: 30 },
    );
    expect(text).toBe(`${'a'.repeat(30)}\n[… truncated: 70 of 100 characters cut]`);
    expect(
      defaultObservation({ kind: 'tool_result', callId: 'c', content }, { maxChars: 100 }),
    ).toBe(content);
  });

  it('truncates at 16,000 characters by default', () => {
    const text = defaultObservation({
      kind: 'tool_result',
      callId: 'c',
      content: 'b'.repeat(20_000),
    });
    expect(text.startsWith('b'.repeat(16_000))).toBe(true);
    expect(text.endsWith('\n[… truncated: 4000 of 20000 characters cut]')).toBe(true);
  });

  it('never cuts a surrogate pair in half', () => {
    const content = `${'a'.repeat(9)}😀tail`; // the emoji is code units 9 and 10
    const text = defaultObservation(
      { kind: 'tool_result', callId: 'c', content },
      { maxChars: 10 },
    );
    expect(text).toBe(`${'a'.repeat(9)}\n[… truncated: 6 of 15 characters cut]`);
    expect(text).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it('refuses a maxChars that is not a whole number ≥ 0', () => {
    for (const maxChars of [-1, 1.5, Number.NaN]) {
      let caught: unknown;
      try {
        defaultObservation({ kind: 'tool_result', callId: 'c', content: 'x' }, { maxChars });
      } catch (error) {
        caught = error;
      }
      expect(isLoomError(caught, RenderErrorCode.INVALID_ARGUMENT)).toBe(true);
    }
  });
});
