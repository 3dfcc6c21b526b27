/**
 * The message and tool types every Loom model provider speaks. They are plain JSON (requests and
 * responses are journaled), and `@loom/render` imports them as types to build prompts.
 */

import type { JsonValue } from '@loom/event-runtime';

/** A JSON value: what the log can hold (the kernel's `JsonValue`, re-exported). */
export type { JsonValue };

/** A JSON Schema object (draft 2020-12 or 7), as providers accept it for tool inputs. */
export type JsonSchema = { [key: string]: JsonValue };

/** A tool the model may call: its name, what it does, and the JSON Schema of its input. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: JsonSchema;
}

/** One tool call a model asked for. `callId` pairs it with its result message. */
export interface ToolCall {
  callId: string;
  tool: string;
  input: JsonValue;
}

/** The system prompt. */
export interface SystemMessage {
  role: 'system';
  content: string;
}

/** What the user (or the runtime, on the user's behalf) says. */
export interface UserMessage {
  role: 'user';
  content: string;
}

/** A model's turn: its words and the tool calls it asked for. */
export interface AssistantMessage {
  role: 'assistant';
  content: string;
  toolCalls?: readonly ToolCall[];
}

/** The answer to one tool call, rendered as text for the model. */
export interface ToolResultMessage {
  role: 'tool';
  callId: string;
  tool: string;
  content: string;
  /** True when the content describes a failure (an error, a denial, an invalid call). */
  isError?: boolean;
}

/** One message of a conversation with a model. */
export type ModelMessage = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage;

/** Whether the model may, must, or must not call tools, or must call one named tool. */
export type ToolChoice = 'auto' | 'none' | 'required' | { tool: string };
