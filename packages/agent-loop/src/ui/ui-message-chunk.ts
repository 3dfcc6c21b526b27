import type { JsonValue } from '@loom/event-runtime';

/**
 * The chunks of the AI SDK's UI message stream protocol (v1) that an agent run's stream is made
 * of: the shapes of `UIMessageChunk` in the `ai` package (`ui-message-stream/ui-message-chunks.ts`),
 * no field more, so the AI SDK's reader (`useChat`, `readUIMessageStream`) takes them as they are.
 */
export type UiMessageChunk =
  | { type: 'start'; messageId?: string }
  | { type: 'start-step' }
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; delta: string }
  | { type: 'text-end'; id: string }
  | { type: 'tool-input-available'; toolCallId: string; toolName: string; input: JsonValue }
  | { type: 'tool-output-available'; toolCallId: string; output: JsonValue }
  | { type: 'tool-output-error'; toolCallId: string; errorText: string }
  | { type: 'tool-approval-request'; approvalId: string; toolCallId: string }
  | { type: `data-${string}`; id?: string; data: JsonValue }
  | { type: 'finish-step' }
  | { type: 'reset-step' }
  | {
      type: 'finish';
      finishReason?: 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'error' | 'other';
      messageMetadata?: JsonValue;
    }
  | { type: 'error'; errorText: string };
