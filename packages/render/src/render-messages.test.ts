import type { ToolSpec } from '@loom/reasoning';
import { describe, expect, it } from 'vitest';
import type { BlueprintNode, HistoryStep } from './blueprint.js';
import { isLoomError, RenderErrorCode } from './errors.js';
import { renderMessages } from './render-messages.js';
import { thrown } from './thrown.test-support.js';
import { approximateTokenizer, type Tokenizer } from './tokenizer.js';

/** One token a code unit, no message overhead: token counts a reader can check by eye. */
function charTokenizer(): Tokenizer & { calls: string[] } {
  const calls: string[] = [];
  return {
    name: 'chars',
    messageOverheadTokens: 0,
    calls,
    count(text: string) {
      calls.push(text);
      return text.length;
    },
  };
}

const step = (i: number, extra = ''): HistoryStep => ({
  text: `t${i}${extra}`,
  calls: [{ callId: `c${i}`, tool: 'ls', input: null }],
  observations: [{ kind: 'tool_result', callId: `c${i}`, content: `r${i}` }],
});

describe('renderMessages', () => {
  it('renders everything, in blueprint order, in one pass when it fits', () => {
    const tools: ToolSpec[] = [{ name: 'ls', description: 'list', inputSchema: {} }];
    const blueprint: BlueprintNode = {
      kind: 'group',
      children: [
        { kind: 'system', text: 'sys' },
        { kind: 'tools', tools },
        { kind: 'user', text: 'task' },
        { kind: 'history', steps: [step(0)] },
      ],
    };
    const tokenizer = charTokenizer();
    const result = renderMessages(blueprint, { tokenBudget: 1000, tokenizer });
    expect(result.messages).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'task' },
      {
        role: 'assistant',
        content: 't0',
        toolCalls: [{ callId: 'c0', tool: 'ls', input: null }],
      },
      { role: 'tool', callId: 'c0', tool: 'ls', content: 'r0' },
    ]);
    expect(result.tools).toEqual(tools);
    // sys 3 + (ls 2 + list 4 + {} 2) + task 4 + (t0 2 + ls 2 + null 4) + r0 2
    expect(result.tokens).toBe(25);
    expect(result).toMatchObject({ dropped: [], passes: 1 });
  });

  it('drops the lowest priority first, the earlier part first among equals', () => {
    const blueprint: BlueprintNode = {
      kind: 'group',
      children: [
        { kind: 'system', text: 'aaaa', priority: 5 },
        { kind: 'user', text: 'bbbb', priority: 1 },
        { kind: 'user', text: 'cccc', priority: 1 },
        { kind: 'user', text: 'dddd', priority: 3 },
      ],
    };
    const result = renderMessages(blueprint, { tokenBudget: 9, tokenizer: charTokenizer() });
    expect(result.messages.map((m) => m.content)).toEqual(['aaaa', 'dddd']);
    expect(result.dropped).toEqual([
      { kind: 'user', path: [1], priority: 1, tokens: 4 },
      { kind: 'user', path: [2], priority: 1, tokens: 4 },
    ]);
    expect(result.tokens).toBe(8);
    expect(result.passes).toBe(2);
  });

  it('stops dropping as soon as the rest fits', () => {
    const blueprint: BlueprintNode = {
      kind: 'group',
      children: [
        { kind: 'user', text: 'aaaa', priority: 1 },
        { kind: 'user', text: 'bbbb', priority: 2 },
        { kind: 'user', text: 'cccc', priority: 3 },
      ],
    };
    const result = renderMessages(blueprint, { tokenBudget: 8, tokenizer: charTokenizer() });
    expect(result.messages.map((m) => m.content)).toEqual(['bbbb', 'cccc']);
  });

  it('drops a tool call together with its result, and keeps the newest keepLast steps', () => {
    const steps = [step(0, 'xxxxxxxx'), step(1), step(2)];
    const blueprint: BlueprintNode = {
      kind: 'group',
      children: [
        { kind: 'system', text: 'sys', required: true },
        { kind: 'history', steps, keepLast: 1 },
      ],
    };
    const all = renderMessages(blueprint, { tokenBudget: Infinity, tokenizer: charTokenizer() });
    expect(all.messages).toHaveLength(7);
    const fit = renderMessages(blueprint, {
      tokenBudget: all.tokens - 1,
      tokenizer: charTokenizer(),
    });
    // Step 0 (the oldest) went, its call and its result both.
    expect(fit.dropped).toEqual([
      { kind: 'history_step', path: [1], step: 0, priority: 0, tokens: 18 },
    ]);
    expect(fit.messages.filter((m) => m.role === 'tool').map((m) => m.callId)).toEqual([
      'c1',
      'c2',
    ]);
    for (const message of fit.messages) {
      if (message.role === 'assistant') expect(message.toolCalls?.[0]?.callId).not.toBe('c0');
    }
    // With room for only the system text and the kept step, step 1 goes too.
    const tight = renderMessages(blueprint, { tokenBudget: 3 + 10, tokenizer: charTokenizer() });
    expect(tight.messages.map((m) => m.content)).toEqual(['sys', 't2', 'r2']);
  });

  it('a required part that cannot fit is TOKEN_BUDGET_TOO_SMALL naming the tokens needed', () => {
    const blueprint: BlueprintNode = {
      kind: 'group',
      required: true,
      children: [
        { kind: 'system', text: 'twelve chars' },
        { kind: 'user', text: 'optional', required: false },
        { kind: 'history', steps: [step(0), step(1)], keepLast: 1, required: false },
      ],
    };
    const error = thrown(() =>
      renderMessages(blueprint, { tokenBudget: 15, tokenizer: charTokenizer() }),
    );
    expect(isLoomError(error, RenderErrorCode.TOKEN_BUDGET_TOO_SMALL)).toBe(true);
    // 12 for the system text + 10 for the newest step (t1 ls null r1).
    expect(error).toMatchObject({ fields: { requiredTokens: 22, budgetTokens: 15 } });
    expect((error as Error).message).toContain('22 tokens');
    expect(renderMessages(blueprint, { tokenBudget: 22, tokenizer: charTokenizer() }).tokens).toBe(
      22,
    );
  });

  it('children inherit priority and required from the nearest group that says', () => {
    const blueprint: BlueprintNode = {
      kind: 'group',
      priority: 7,
      children: [
        { kind: 'group', required: true, children: [{ kind: 'user', text: 'kept' }] },
        { kind: 'group', priority: 2, children: [{ kind: 'user', text: 'low' }] },
        { kind: 'user', text: 'mid' },
      ],
    };
    const result = renderMessages(blueprint, { tokenBudget: 7, tokenizer: charTokenizer() });
    expect(result.messages.map((m) => m.content)).toEqual(['kept', 'mid']);
    expect(result.dropped).toEqual([{ kind: 'user', path: [1, 0], priority: 2, tokens: 3 }]);
  });

  it('measures every text exactly once and walks the parts at most twice, whatever it drops', () => {
    const steps = Array.from({ length: 50 }, (_, i) => step(i));
    const blueprint: BlueprintNode = {
      kind: 'group',
      children: [
        { kind: 'system', text: 'sys', required: true },
        { kind: 'history', steps, priority: 1 },
        { kind: 'user', text: 'now', required: true },
      ],
    };
    for (const budget of [Infinity, 300, 50, 6]) {
      const tokenizer = charTokenizer();
      const result = renderMessages(blueprint, { tokenBudget: budget, tokenizer });
      // sys + now + per step: text, tool name, input JSON, result.
      expect(tokenizer.calls).toHaveLength(2 + 50 * 4);
      expect(result.passes).toBe(budget === Infinity ? 1 : 2);
      expect(result.tokens).toBeLessThanOrEqual(budget);
    }
  });

  it('Infinity priority parts drop last, and the order of Infinity ties is still by position', () => {
    const blueprint: BlueprintNode = {
      kind: 'group',
      children: [
        { kind: 'user', text: 'aa', priority: Infinity },
        { kind: 'user', text: 'bb', priority: Infinity },
        { kind: 'user', text: 'cc', priority: -Infinity },
      ],
    };
    const result = renderMessages(blueprint, { tokenBudget: 2, tokenizer: charTokenizer() });
    expect(result.messages.map((m) => m.content)).toEqual(['bb']);
  });

  it('uses the approximate tokenizer by default: ceil(length / 4) + 3 a message', () => {
    const result = renderMessages({ kind: 'user', text: 'abcde' }, { tokenBudget: 100 });
    expect(result.tokens).toBe(2 + 3);
    expect(approximateTokenizer.count('')).toBe(0);
    expect(approximateTokenizer.count('abcd')).toBe(1);
  });

  it('refuses a malformed blueprint with INVALID_BLUEPRINT naming the node', () => {
    const cases: [unknown, readonly number[]][] = [
      [{ kind: 'group', children: [{ kind: 'poem', text: 'x' }] }, [0]],
      [
        {
          kind: 'group',
          children: [
            { kind: 'user', text: 'x' },
            { kind: 'user', text: 3 },
          ],
        },
        [1],
      ],
      [{ kind: 'user', text: 'x', priority: Number.NaN }, []],
      [{ kind: 'user', text: 'x', required: 'yes' }, []],
      [{ kind: 'tools', tools: [{ name: 'x' }] }, []],
      [{ kind: 'history', steps: [], keepLast: -1 }, []],
      [{ kind: 'group', children: [null] }, [0]],
      [
        {
          kind: 'history',
          steps: [
            {
              calls: [{ callId: 'c', tool: 't', input: 1n }],
              observations: [{ kind: 'tool_result', callId: 'c', content: 1 }],
            },
          ],
        },
        [],
      ],
    ];
    for (const [blueprint, nodePath] of cases) {
      const error = thrown(() => renderMessages(blueprint as BlueprintNode, { tokenBudget: 10 }));
      expect(error).toMatchObject({ code: 'INVALID_BLUEPRINT', fields: { nodePath } });
    }
  });

  it('refuses a bad budget and a tokenizer that counts nonsense with INVALID_ARGUMENT', () => {
    for (const tokenBudget of [-1, 1.5, Number.NaN]) {
      const error = thrown(() => renderMessages({ kind: 'user', text: 'x' }, { tokenBudget }));
      expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', fields: { option: 'tokenBudget' } });
    }
    for (const bad of [-1, 0.5, Number.NaN]) {
      const tokenizer: Tokenizer = { name: 'bad', messageOverheadTokens: 0, count: () => bad };
      const error = thrown(() =>
        renderMessages({ kind: 'user', text: 'x' }, { tokenBudget: 10, tokenizer }),
      );
      expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', fields: { option: 'tokenizer' } });
    }
  });

  it('renders an assistant node as one assistant message', () => {
    const result = renderMessages(
      {
        kind: 'group',
        children: [
          { kind: 'user', text: 'hi' },
          { kind: 'assistant', text: 'hello' },
        ],
      },
      { tokenBudget: 100, tokenizer: charTokenizer() },
    );
    expect(result.messages).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
    ]);
    expect(result.tokens).toBe(7);
  });

  it('drops a conversation exchange whole, the oldest first, never a call without its result', () => {
    // Each exchange: its user message (u0 = 2 tokens), one step with a call and its result
    // (t0 + ls + null + r0 = 2 + 2 + 4 + 2 = 10), its reply (a0 = 2): 14 tokens.
    const exchange = (i: number) => ({
      user: `u${i}`,
      steps: [step(i), { text: `a${i}` }],
    });
    const blueprint: BlueprintNode = {
      kind: 'group',
      children: [
        { kind: 'system', text: 'sys', required: true },
        { kind: 'conversation', exchanges: [exchange(0), exchange(1), exchange(2)], priority: 0 },
        { kind: 'user', text: 'now', required: true },
      ],
    };
    const all = renderMessages(blueprint, { tokenBudget: 100, tokenizer: charTokenizer() });
    expect(all.tokens).toBe(3 + 3 * 14 + 3);
    expect(all.messages.map((m) => m.role)).toEqual([
      'system',
      ...['user', 'assistant', 'tool', 'assistant'],
      ...['user', 'assistant', 'tool', 'assistant'],
      ...['user', 'assistant', 'tool', 'assistant'],
      'user',
    ]);
    // One token over what two exchanges need: the oldest goes, all of it.
    const trimmed = renderMessages(blueprint, {
      tokenBudget: 3 + 2 * 14 + 3 + 1,
      tokenizer: charTokenizer(),
    });
    expect(trimmed.dropped).toEqual([
      { kind: 'exchange', path: [1], step: 0, priority: 0, tokens: 14 },
    ]);
    expect(trimmed.messages.map((m) => m.content)).toEqual([
      'sys',
      'u1',
      't1',
      'r1',
      'a1',
      'u2',
      't2',
      'r2',
      'a2',
      'now',
    ]);
    // keepLast keeps the newest exchange whatever the budget asks.
    const kept = renderMessages(
      {
        ...blueprint,
        children: blueprint.children.map((c) =>
          c.kind === 'conversation' ? { ...c, keepLast: 1 } : c,
        ),
      },
      { tokenBudget: 3 + 14 + 3, tokenizer: charTokenizer() },
    );
    expect(kept.dropped.map((d) => d.step)).toEqual([0, 1]);
    expect(
      thrown(() =>
        renderMessages(
          {
            ...blueprint,
            children: blueprint.children.map((c) =>
              c.kind === 'conversation' ? { ...c, keepLast: 1 } : c,
            ),
          },
          { tokenBudget: 3 + 14 + 2, tokenizer: charTokenizer() },
        ),
      ),
    ).toMatchObject({ code: RenderErrorCode.TOKEN_BUDGET_TOO_SMALL });
  });

  it('refuses a conversation whose exchange has no user text with INVALID_BLUEPRINT', () => {
    const bad = { kind: 'conversation', exchanges: [{ steps: [] }] } as unknown as BlueprintNode;
    expect(thrown(() => renderMessages(bad, { tokenBudget: 10 }))).toMatchObject({
      code: 'INVALID_BLUEPRINT',
      fields: { nodePath: [] },
    });
  });
});
