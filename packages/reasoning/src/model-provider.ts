import type { JsonSchema, ModelMessage, ToolCall, ToolChoice, ToolSpec } from './model-types.js';

/**
 * What a provider is asked. Everything but `signal` is JSON, so a request can be logged and a
 * call replayed against the same input.
 */
export interface ModelRequest {
  messages: readonly ModelMessage[];
  tools?: readonly ToolSpec[];
  /** Default `'auto'` when tools are given. */
  toolChoice?: ToolChoice;
  /** Tags the router matches routes on (`['smart']`, `['cheap', 'local']`); providers ignore them. */
  tags?: readonly string[];
  maxOutputTokens?: number;
  temperature?: number;
  /**
   * Ask for a final answer in JSON that fits `schema` (structured output), where the provider
   * supports it (an AI SDK provider gets it as its `responseFormat`; others ignore it). The model
   * may still call tools; a text answer is then JSON. The caller checks it either way.
   */
  responseFormat?: { type: 'json'; schema: JsonSchema; name?: string };
  /** Aborts the call. Never journaled. */
  signal?: AbortSignal;
}

/** Why the model stopped. `'error'` and `'other'` come from providers that say so. */
export type FinishReason =
  | 'stop'
  | 'length'
  | 'tool_calls'
  | 'content_filter'
  | 'error'
  | 'interrupted'
  | 'other';

/** Tokens one call used. `null` when the provider did not report that count. */
export interface ModelUsage {
  inputTokens: number | null;
  outputTokens: number | null;
  /** Input tokens served from the provider's prompt cache (a part of `inputTokens`). */
  cachedInputTokens: number | null;
}

/**
 * A tool call the model made that cannot be run as it is: kept verbatim (the raw argument text)
 * so the agent loop can record it and tell the model what was wrong. `reason`: `input_not_json`
 * (the arguments do not parse), `input_not_object` (they parse to something other than an
 * object: `5`, `null`, `[1]`), `unknown_tool` (the request offered no tool of that name).
 *
 * It is never replayed as a tool call (an `AssistantMessage`'s `toolCalls` need JSON input, and
 * no API accepts a call it could not have made): feed it back as the assistant's text plus a user
 * message describing the invalid decision (`@loom/render`'s `invalid_decision` observation,
 * which has no `callId`).
 */
export interface InvalidToolCall {
  callId: string;
  tool: string;
  /** The arguments exactly as the model wrote them. */
  rawInput: string;
  reason: 'input_not_json' | 'input_not_object' | 'unknown_tool';
  /** What is wrong, in words the model can act on. */
  message: string;
}

/**
 * Something wrong with a whole response (not with one call), for the agent loop to feed back:
 * `empty` (no text, no tool call), `tool_call_required` (text where `toolChoice` demanded a
 * call), `invalid_tool_calls` (every tool call it made is in `invalidToolCalls`).
 */
export interface ResponseProblem {
  kind: 'empty' | 'tool_call_required' | 'invalid_tool_calls';
  message: string;
}

/** A route the router tried before the one that answered, and why it moved on. */
export interface FallbackRecord {
  route: string;
  code: string;
  message: string;
}

/**
 * What a provider answers: JSON only, so it is recorded verbatim in a step. Bad model output is
 * data here (`invalidToolCalls`, `problem`), never an exception.
 */
export interface ModelResponse {
  text: string;
  /** The calls that name a tool of the request and whose arguments are JSON. */
  toolCalls: ToolCall[];
  invalidToolCalls: InvalidToolCall[];
  problem: ResponseProblem | null;
  finishReason: FinishReason;
  usage: ModelUsage;
  /** The model that answered, as the provider names it. */
  model: string;
  /** The provider that answered. */
  provider: string;
  /**
   * The router route that answered, by the id `fallbacks[].route` uses (`'p#2'` for a provider's
   * second route); absent without a router.
   */
  route?: string;
  /** From sending the request to the last byte, on the provider's clock. */
  latencyMs: number;
  /** From the price table the provider was given; `null` = unknown (no price, or no token counts). */
  costUsd: number | null;
  /** Routes the router tried and left before this answer, in order; empty without a router. */
  fallbacks: FallbackRecord[];
}

/**
 * One piece of a streamed response. Text and tool arguments arrive in pieces; the last delta is
 * always `finish`, and its response equals what `generate` returns for the same answer.
 */
export type ModelDelta =
  | { type: 'text'; text: string }
  | { type: 'tool_call_start'; callId: string; tool: string }
  | { type: 'tool_call_input'; callId: string; inputText: string }
  | { type: 'finish'; response: ModelResponse };

/**
 * A model behind Loom's one interface: JSON in, JSON out. `stream` yields deltas ending in
 * `finish`; a failure is a `LoomError` with a `MODEL_*` code (see `ReasoningErrorCode`).
 */
export interface ModelProvider {
  /** A name for accounting and routing (`'anthropic:claude-sonnet-4-5'`). */
  readonly id: string;
  generate(request: ModelRequest): Promise<ModelResponse>;
  stream(request: ModelRequest): AsyncIterable<ModelDelta>;
  /**
   * Prepares what the first call needs (a connection, a loaded model), where the provider can.
   * Resolves when done; never throws for a provider that has nothing to warm.
   */
  warm?(): Promise<void>;
}
