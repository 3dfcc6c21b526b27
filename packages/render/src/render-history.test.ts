import { describe, expect, it } from 'vitest';
import type { HistoryStep } from './blueprint.js';
import { isLoomError, RenderErrorCode } from './errors.js';
import { renderHistory } from './render-history.js';
import { thrown } from './thrown.test-support.js';

describe('renderHistory', () => {
  it('renders each observation kind for its call, errors flagged, parallel calls in one turn', () => {
    const steps: HistoryStep[] = [
      { text: 'Hello.' },
      {
        text: '',
        calls: [
          { callId: 'a', tool: 'read', input: { path: '/x' } },
          { callId: 'b', tool: 'rm', input: { path: '/' } },
          { callId: 'c', tool: 'nope', input: 'not json {' },
          { callId: 'd', tool: 'fetch', input: null },
        ],
        observations: [
          { kind: 'denied', callId: 'b', reason: 'destructive tools need approval' },
          { kind: 'tool_result', callId: 'a', content: { size: 3 } },
          { kind: 'invalid_decision', callId: 'c', message: 'unknown tool nope' },
          { kind: 'tool_error', callId: 'd', message: 'ECONNRESET' },
        ],
      },
      { observations: [{ kind: 'invalid_decision', message: 'a tool call was required' }] },
    ];
    expect(renderHistory(steps)).toEqual([
      { role: 'assistant', content: 'Hello.' },
      { role: 'assistant', content: '', toolCalls: steps[1]!.calls },
      {
        role: 'tool',
        callId: 'b',
        tool: 'rm',
        content: 'Denied: destructive tools need approval',
        isError: true,
      },
      { role: 'tool', callId: 'a', tool: 'read', content: '{"size":3}' },
      {
        role: 'tool',
        callId: 'c',
        tool: 'nope',
        content: 'Invalid decision: unknown tool nope',
        isError: true,
      },
      { role: 'tool', callId: 'd', tool: 'fetch', content: 'Error: ECONNRESET', isError: true },
      { role: 'user', content: 'Invalid decision: a tool call was required' },
    ]);
  });

  it('puts an invalid decision that answers no call after the tool messages of its step', () => {
    const messages = renderHistory([
      {
        calls: [{ callId: 'a', tool: 'read', input: null }],
        observations: [
          { kind: 'invalid_decision', message: 'also said something odd' },
          { kind: 'tool_result', callId: 'a', content: 'ok' },
        ],
      },
    ]);
    expect(messages.map((m) => m.role)).toEqual(['assistant', 'tool', 'user']);
  });

  it('uses the observation renderer it is given', () => {
    const messages = renderHistory(
      [
        {
          calls: [{ callId: 'a', tool: 't', input: 1 }],
          observations: [{ kind: 'tool_result', callId: 'a', content: 2 }],
        },
      ],
      { renderObservation: (o) => `<<${o.kind}>>` },
    );
    expect(messages[1]).toEqual({
      role: 'tool',
      callId: 'a',
      tool: 't',
      content: '<<tool_result>>',
    });
  });

  it('refuses orphans with INVALID_HISTORY naming the step and the call', () => {
    const call = { callId: 'a', tool: 't', input: null };
    const cases: [HistoryStep, string][] = [
      [{ calls: [call] }, 'a'],
      [{ calls: [call], observations: [{ kind: 'tool_result', callId: 'z', content: 1 }] }, 'z'],
      [
        {
          calls: [call],
          observations: [
            { kind: 'tool_result', callId: 'a', content: 1 },
            { kind: 'tool_error', callId: 'a', message: 'x' },
          ],
        },
        'a',
      ],
      [
        { calls: [call, call], observations: [{ kind: 'tool_result', callId: 'a', content: 1 }] },
        'a',
      ],
    ];
    for (const [bad, callId] of cases) {
      const error = thrown(() => renderHistory([{ text: 'fine' }, bad]));
      expect(isLoomError(error, RenderErrorCode.INVALID_HISTORY)).toBe(true);
      expect(error).toMatchObject({ fields: { step: 1, callId } });
    }
    const noCallId = thrown(() =>
      renderHistory([{ observations: [{ kind: 'tool_error', message: 'x' } as never] }]),
    );
    expect(noCallId).toMatchObject({ code: 'INVALID_HISTORY', fields: { step: 0 } });
  });

  it('refuses a malformed call or observation with INVALID_HISTORY naming the step and what is wrong', () => {
    const cases: [unknown, RegExp][] = [
      [{ calls: [null] }, /each call needs a string callId and tool/],
      [{ calls: [{ callId: 7, tool: 't', input: null }] }, /each call needs a string callId/],
      [{ calls: [{ callId: 'a', input: null }] }, /each call needs a string callId and tool/],
      [{ observations: [null] }, /an observation must be an object/],
      [{ observations: ['ok'] }, /an observation must be an object/],
    ];
    for (const [bad, message] of cases) {
      const error = thrown(() => renderHistory([{ text: 'fine' }, bad as HistoryStep]));
      expect(isLoomError(error, RenderErrorCode.INVALID_HISTORY)).toBe(true);
      expect(error).toMatchObject({ fields: { step: 1 } });
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).toMatch(/^step 1 of the history/);
    }
  });

  it('refuses an observation renderer that returns something other than a string', () => {
    const error = thrown(() =>
      renderHistory([{ observations: [{ kind: 'invalid_decision', message: 'x' }] }], {
        renderObservation: () => 42 as unknown as string,
      }),
    );
    expect(error).toMatchObject({
      code: 'INVALID_ARGUMENT',
      fields: { option: 'renderObservation' },
    });
  });
});
