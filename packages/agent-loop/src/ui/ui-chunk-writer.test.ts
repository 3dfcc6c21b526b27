// The writer's chunks read by the AI SDK's own reader (`readUIMessageStream` of `ai` 7, the code
// useChat runs): the message a page ends with, part by part. That `UiMessageChunk` is assignable to
// the reader's `UIMessageChunk` is checked by the compiler here too.
import { readUIMessageStream, type UIMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../agent-event.js';
import type { RunResult } from '../run-result.js';
import { UiChunkWriter } from './ui-chunk-writer.js';
import type { UiMessageChunk } from './ui-message-chunk.js';

const base = { runId: 'r1', replayed: false } as const;
const usage = {
  turn: 1,
  provider: 'local',
  model: 'm',
  inputTokens: 1,
  outputTokens: 1,
  cachedInputTokens: 0,
  costUsd: null,
  latencyMs: 1,
  fallbacks: [],
};
const answered: RunResult = {
  runId: 'r1',
  reason: 'goal_completed',
  output: { reply: 'Goodbye now', orderId: 'A-17' },
  turns: 1,
  usage: {
    modelCalls: 1,
    inputTokens: 1,
    outputTokens: 1,
    cachedInputTokens: 0,
    costUsd: 0,
    costUnknownCalls: 1,
    latencyMs: 1,
    fallbacks: 0,
  },
  calls: [],
};

/** The message the AI SDK's reader makes of `events`, written by a fresh writer. */
async function messageOf(events: readonly AgentEvent[]): Promise<UIMessage> {
  const writer = new UiChunkWriter();
  const chunks: UiMessageChunk[] = [
    ...writer.start('r1'),
    ...events.flatMap((e) => writer.event(e)),
  ];
  const stream = new ReadableStream<UiMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream })) {
    last = message;
  }
  if (last === undefined) throw new Error('the reader made no message of the chunks');
  return last;
}

describe('UiChunkWriter read by the AI SDK', () => {
  it('a retracted attempt’s text leaves the message; the next attempt’s text and the output stay', async () => {
    const message = await messageOf([
      { ...base, type: 'turn_started', turn: 1 },
      { ...base, type: 'text_delta', turn: 1, attempt: 'a', offset: 0, text: 'Hello ' },
      { ...base, type: 'text_delta', turn: 1, attempt: 'a', offset: 6, text: 'wor' },
      { ...base, type: 'text_retracted', turn: 1, attempt: 'a', length: 9 },
      { ...base, type: 'text_delta', turn: 1, attempt: 'b', offset: 0, text: 'Goodbye now' },
      { ...base, type: 'model_responded', turn: 1, text: 'Goodbye now', toolCalls: [], usage },
      { ...base, type: 'finished', result: answered },
    ]);
    expect(message.id).toBe('r1');
    const texts = message.parts.flatMap((part) => (part.type === 'text' ? [part.text] : []));
    expect(texts).toEqual(['Goodbye now']);
    expect(message.parts.map((part) => part.type)).toEqual([
      'step-start',
      'data-loom-text-retracted',
      'text',
      'data-loom-output',
    ]);
    expect(message.parts.find((part) => part.type === 'data-loom-output')).toMatchObject({
      id: 'r1',
      data: { reply: 'Goodbye now', orderId: 'A-17' },
    });
  });

  it('a retraction drops only the current turn’s text: earlier turns’ parts stay', async () => {
    const message = await messageOf([
      { ...base, type: 'turn_started', turn: 1 },
      { ...base, type: 'text_delta', turn: 1, attempt: 'a', offset: 0, text: 'Looking.' },
      {
        ...base,
        type: 'model_responded',
        turn: 1,
        text: 'Looking.',
        toolCalls: [{ callId: 'c1', tool: 'lookup', input: { id: 'A-17' } }],
        usage,
      },
      {
        ...base,
        type: 'tool_completed',
        turn: 1,
        callId: 'c1',
        tool: 'lookup',
        attempt: 1,
        outcome: 'result',
        output: { status: 'shipped' },
      },
      { ...base, type: 'turn_started', turn: 2 },
      { ...base, type: 'text_delta', turn: 2, attempt: 'x', offset: 0, text: 'It shi' },
      { ...base, type: 'text_retracted', turn: 2, attempt: 'x', length: 6 },
      { ...base, type: 'text_delta', turn: 2, attempt: 'y', offset: 0, text: 'It shipped.' },
      { ...base, type: 'model_responded', turn: 2, text: 'It shipped.', toolCalls: [], usage },
      { ...base, type: 'finished', result: { ...answered, output: 'It shipped.', turns: 2 } },
    ]);
    const texts = message.parts.flatMap((part) => (part.type === 'text' ? [part.text] : []));
    expect(texts).toEqual(['Looking.', 'It shipped.']);
    expect(message.parts.find((part) => part.type === 'tool-lookup')).toMatchObject({
      state: 'output-available',
      output: { status: 'shipped' },
    });
  });
});
