import type {
  FinishReason,
  InvalidToolCall,
  ModelRequest,
  ModelResponse,
  ModelUsage,
  ResponseProblem,
} from '../model-provider.js';
import type { JsonValue, ToolCall } from '../model-types.js';
import { costUsd, type PriceTable } from '../price-table.js';

/** A tool call as it came off the wire: its arguments still text. */
export interface RawToolCall {
  callId: string;
  tool: string;
  rawInput: string;
}

/** Everything a provider read from the model, before Loom judges it. */
export interface RawAnswer {
  text: string;
  toolCalls: readonly RawToolCall[];
  finishReason: FinishReason;
  usage: ModelUsage;
  model: string;
}

/** Who answered and how long it took, for the accounting fields. */
export interface AnswerContext {
  provider: string;
  latencyMs: number;
  prices: PriceTable | undefined;
}

/**
 * Turns a raw answer into a response, judging it against the request: calls with arguments that
 * are not JSON or that name a tool the request did not offer become `invalidToolCalls` (verbatim),
 * and an empty answer or text where a call was required becomes `problem`. Never throws on model
 * output: the agent loop feeds these back to the model.
 */
export function assembleResponse(
  raw: RawAnswer,
  request: ModelRequest,
  context: AnswerContext,
): ModelResponse {
  const offered = new Set((request.tools ?? []).map((tool) => tool.name));
  const toolCalls: ToolCall[] = [];
  const invalidToolCalls: InvalidToolCall[] = [];
  for (const call of raw.toolCalls) {
    const verdict = judgeCall(call, offered);
    if ('reason' in verdict) invalidToolCalls.push(verdict);
    else toolCalls.push(verdict);
  }
  return {
    text: raw.text,
    toolCalls,
    invalidToolCalls,
    problem: problemOf(raw, request, toolCalls.length, invalidToolCalls.length),
    finishReason: raw.finishReason,
    usage: raw.usage,
    model: raw.model,
    provider: context.provider,
    latencyMs: context.latencyMs,
    costUsd: costUsd(raw.usage, raw.model, context.prices),
    fallbacks: [],
  };
}

function judgeCall(call: RawToolCall, offered: ReadonlySet<string>): ToolCall | InvalidToolCall {
  if (!offered.has(call.tool)) {
    const names = [...offered].map((name) => `'${name}'`).join(', ') || 'none';
    return {
      ...call,
      reason: 'unknown_tool',
      message: `there is no tool named '${call.tool}'; the tools are: ${names}`,
    };
  }
  // An empty argument string is how several APIs send a call of a tool without parameters.
  const text = call.rawInput.trim() === '' ? '{}' : call.rawInput;
  let input: JsonValue;
  try {
    input = JSON.parse(text) as JsonValue;
  } catch (error) {
    return {
      ...call,
      reason: 'input_not_json',
      message: `the arguments of '${call.tool}' are not valid JSON (${(error as Error).message}); send one JSON object`,
    };
  }
  // Tool arguments are an object in every API (the schema's type is 'object'); 5, null or [1]
  // would reach the tool as something it never declared.
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return {
      ...call,
      reason: 'input_not_object',
      message: `the arguments of '${call.tool}' are ${input === null ? 'null' : Array.isArray(input) ? 'an array' : `a ${typeof input}`}, not a JSON object; send one JSON object with the tool's parameters`,
    };
  }
  return { callId: call.callId, tool: call.tool, input };
}

function problemOf(
  raw: RawAnswer,
  request: ModelRequest,
  validCalls: number,
  invalidCalls: number,
): ResponseProblem | null {
  if (validCalls === 0 && invalidCalls > 0) {
    return {
      kind: 'invalid_tool_calls',
      message: `none of the ${invalidCalls} tool call(s) can be run; see invalidToolCalls`,
    };
  }
  if (validCalls > 0) return null;
  const choice = request.toolChoice;
  if (choice === 'required' || (typeof choice === 'object' && choice !== null)) {
    const which = typeof choice === 'object' ? `the tool '${choice.tool}'` : 'a tool';
    return {
      kind: 'tool_call_required',
      message: `the request required a call of ${which}, and the model answered ${raw.text.trim() === '' ? 'nothing' : 'with text only'}`,
    };
  }
  if (raw.text.trim() === '') {
    return { kind: 'empty', message: 'the model returned no text and no tool call' };
  }
  return null;
}
