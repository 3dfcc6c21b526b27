import { describe, expectTypeOf, it } from 'vitest';
import type { ModelMessage, ToolCall } from './index.js';

describe('model types', () => {
  it('a tool result message names the call it answers', () => {
    const call: ToolCall = { callId: 'c1', tool: 'search', input: { q: 'loom' } };
    const answer: ModelMessage = {
      role: 'tool',
      callId: call.callId,
      tool: call.tool,
      content: '3 hits',
    };
    expectTypeOf(answer).toMatchTypeOf<ModelMessage>();
    // @ts-expect-error a tool result needs the call it answers
    const orphan: ModelMessage = { role: 'tool', content: 'x' };
    void orphan;
  });
});
