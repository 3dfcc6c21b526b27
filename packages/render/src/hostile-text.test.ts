import { describe, expect, it } from 'vitest';
import type { BlueprintNode } from './blueprint.js';
import { isLoomError, RenderErrorCode } from './errors.js';
import { RenderLimits } from './limits.js';
import { renderHistory } from './render-history.js';
import { renderMessages } from './render-messages.js';
import { thrown } from './thrown.test-support.js';

const hostile =
  'lone \ud800 and \udfff, NUL \u0000, ESC \u001b[31m, LS \u2028, BOM \ufeff, DEL \u007f';

describe('hostile text', () => {
  it('lone surrogates and control characters are rendered faithfully, and survive a JSON round trip', () => {
    const blueprint: BlueprintNode = {
      kind: 'group',
      children: [
        { kind: 'system', text: hostile },
        {
          kind: 'tools',
          tools: [{ name: hostile, description: hostile, inputSchema: { [hostile]: hostile } }],
        },
        { kind: 'user', text: hostile },
        {
          kind: 'history',
          steps: [
            {
              text: hostile,
              calls: [
                { callId: hostile, tool: hostile, input: { q: hostile } },
                { callId: 'b', tool: 't', input: hostile },
              ],
              observations: [
                { kind: 'tool_result', callId: hostile, content: hostile },
                { kind: 'tool_error', callId: 'b', message: hostile },
              ],
            },
            { observations: [{ kind: 'invalid_decision', message: hostile }] },
          ],
        },
      ],
    };
    const result = renderMessages(blueprint, { tokenBudget: 10_000 });
    expect(result.dropped).toEqual([]);
    expect(result.messages).toEqual([
      { role: 'system', content: hostile },
      { role: 'user', content: hostile },
      {
        role: 'assistant',
        content: hostile,
        toolCalls: [
          { callId: hostile, tool: hostile, input: { q: hostile } },
          { callId: 'b', tool: 't', input: hostile },
        ],
      },
      { role: 'tool', callId: hostile, tool: hostile, content: hostile },
      { role: 'tool', callId: 'b', tool: 't', content: `Error: ${hostile}`, isError: true },
      { role: 'user', content: `Invalid decision: ${hostile}` },
    ]);
    expect(result.tools[0]?.name).toBe(hostile);
    // The log holds JSON: the same code units come back, lone surrogates included.
    const roundTrip = JSON.parse(JSON.stringify(result)) as typeof result;
    expect(roundTrip.messages).toStrictEqual(result.messages);
    expect(roundTrip.messages[0]?.content.charCodeAt(5)).toBe(0xd800);
  });

  it('a huge tool result is truncated by the default observation and still renders', () => {
    const content = 'x'.repeat(10 * 1024 * 1024);
    const messages = renderHistory([
      {
        calls: [{ callId: 'a', tool: 'cat', input: null }],
        observations: [{ kind: 'tool_result', callId: 'a', content }],
      },
    ]);
    const rendered = messages[1]!.content;
    expect(rendered.length).toBeLessThan(RenderLimits.observationCharsDefault + 100);
    expect(rendered).toMatch(
      new RegExp(
        `\\[… truncated: ${content.length - RenderLimits.observationCharsDefault} of ${content.length} characters cut\\]$`,
      ),
    );
  });

  it('a text over RenderLimits.textLengthMax is refused with TEXT_TOO_LARGE naming where, not measured', () => {
    let measured = 0;
    const tokenizer = {
      name: 'spy',
      messageOverheadTokens: 0,
      count: (t: string) => {
        measured += t.length;
        return 1;
      },
    };
    const huge = 'y'.repeat(RenderLimits.textLengthMax + 1);
    const cases: [BlueprintNode, readonly number[]][] = [
      [
        {
          kind: 'group',
          children: [
            { kind: 'user', text: 'ok' },
            { kind: 'system', text: huge },
          ],
        },
        [1],
      ],
      [{ kind: 'group', children: [{ kind: 'history', steps: [{ text: huge }] }] }, [0]],
      [
        {
          kind: 'history',
          steps: [
            {
              calls: [{ callId: 'a', tool: 't', input: { blob: huge } }],
              observations: [{ kind: 'tool_result', callId: 'a', content: 1 }],
            },
          ],
        },
        [],
      ],
    ];
    for (const [blueprint, nodePath] of cases) {
      measured = 0;
      const error = thrown(() => renderMessages(blueprint, { tokenBudget: Infinity, tokenizer }));
      expect(isLoomError(error, RenderErrorCode.TEXT_TOO_LARGE)).toBe(true);
      expect(error).toMatchObject({
        fields: { nodePath, limit: 'textLengthMax', max: RenderLimits.textLengthMax },
      });
      expect(measured).toBeLessThan(RenderLimits.textLengthMax);
    }
    // At the limit exactly, the text is measured and, when it fits, rendered.
    const atLimit = 'z'.repeat(RenderLimits.textLengthMax);
    const result = renderMessages({ kind: 'user', text: atLimit }, { tokenBudget: Infinity });
    expect(result.messages[0]?.content).toBe(atLimit);
    expect(result.tokens).toBe(RenderLimits.textLengthMax / 4 + 3);
  });

  it('an over-budget huge optional part is dropped, the required rest kept', () => {
    const blueprint: BlueprintNode = {
      kind: 'group',
      children: [
        { kind: 'system', text: 'rules', required: true },
        { kind: 'user', text: 'q'.repeat(1_000_000) },
      ],
    };
    const result = renderMessages(blueprint, { tokenBudget: 1_000 });
    expect(result.messages).toEqual([{ role: 'system', content: 'rules' }]);
    expect(result.dropped).toEqual([{ kind: 'user', path: [1], priority: 0, tokens: 250_003 }]);
  });
});
