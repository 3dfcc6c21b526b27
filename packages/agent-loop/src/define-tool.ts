import type { JsonValue } from '@loom/event-runtime';
import type { JsonSchema } from '@loom/reasoning';
import { AgentErrorCode, LoomError } from './errors.js';
import {
  type CompiledInput,
  compileInput,
  type StandardSchemaLike,
} from './internal/tool-input.js';
import { type SideEffect, sideEffects } from './side-effect.js';

/** A tool call that runs longer than this fails with `TIMEOUT` (an observation), unless the tool says otherwise. */
export const toolTimeoutMsDefault = 60_000;

/** Tool names the model sees: 1–64 of `A-Za-z0-9_-` (what OpenAI and Anthropic accept). */
const toolNamePattern = /^[A-Za-z0-9_-]{1,64}$/;

/** What a tool's `run` receives besides its input. */
export interface ToolContext {
  /** The agent run (the flow's execution id). */
  readonly runId: string;
  /** The turn of the run, from 1. */
  readonly turn: number;
  /** The model's id for this call. */
  readonly callId: string;
  /**
   * Stable across re-runs of this call: hand it to the outside world so it can deduplicate
   * (a `read_only` or `idempotent` tool runs again after a crash).
   */
  readonly idempotencyKey: string;
  /** Fires on cancel, timeout, or when this process stops driving the run. */
  readonly signal: AbortSignal;
}

/** A tool's input: a Standard Schema (zod, valibot, arktype, …) or a JSON Schema object. */
export type ToolInput = StandardSchemaLike | JsonSchema;

/** The input type `run` gets: the Standard Schema's output type, or any JSON for a JSON Schema. */
export type ToolInputOf<S> = S extends { readonly '~standard': { readonly types?: infer T } }
  ? NonNullable<T> extends { readonly output: infer O }
    ? O
    : JsonValue
  : JsonValue;

/** What `defineTool` takes. */
export interface ToolDefinition<S extends ToolInput = ToolInput, O extends JsonValue = JsonValue> {
  /** The name the model calls: 1–64 of `A-Za-z0-9_-`. */
  name: string;
  /** What the tool does, for the model. */
  description: string;
  /** The input's schema; the model sees it as JSON Schema. */
  input: S;
  /** The JSON Schema the model sees, when the Standard Schema cannot convert itself. */
  jsonSchema?: JsonSchema;
  /** What calling it does to the world (decides the default policy and crash handling). */
  sideEffect: SideEffect;
  /** Does the work. A throw (or a timeout) becomes a `tool_error` observation. The output must be JSON. */
  run(input: ToolInputOf<S>, context: ToolContext): Promise<O>;
  /** Default {@link toolTimeoutMsDefault}. */
  timeoutMs?: number;
}

/** A checked tool, ready for an agent. */
export interface Tool<I = JsonValue, O extends JsonValue = JsonValue> {
  readonly name: string;
  readonly description: string;
  readonly sideEffect: SideEffect;
  readonly timeoutMs: number;
  /** The JSON Schema of the input, as the model sees it. */
  readonly inputSchema: JsonSchema;
  run(input: I, context: ToolContext): Promise<O>;
  /** @internal Checks an input; undefined when valid, else a message for the model. */
  readonly checkInput: CompiledInput['check'];
}

/**
 * Defines a tool an agent may call. The input schema is compiled once here: a Standard Schema
 * converts itself to the JSON Schema the model sees (zod 4: `~standard.jsonSchema`), a JSON
 * Schema is used as it is. Arguments are validated before the policy sees the call.
 *
 * Error codes: `INVALID_ARGUMENT` (a bad name, an unknown side-effect class, a schema that
 * cannot be shown to the model, a bad `timeoutMs`).
 *
 * @example
 * const lookup = defineTool({
 *   name: 'lookup_order',
 *   description: 'Look an order up by id',
 *   input: z.object({ id: z.string() }),
 *   sideEffect: 'read_only',
 *   run: async ({ id }) => orders.get(id), // id: string, from the schema
 * });
 */
export function defineTool<S extends ToolInput, O extends JsonValue = JsonValue>(
  definition: ToolDefinition<S, O>,
): Tool<ToolInputOf<S>, O> {
  const { name, description, sideEffect, run } = definition;
  if (typeof name !== 'string' || !toolNamePattern.test(name)) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `a tool name must be 1 to 64 letters, digits, '_' or '-', got ${JSON.stringify(name)}`,
      { actual: String(name) },
    );
  }
  if (typeof description !== 'string') {
    throw new LoomError(AgentErrorCode.INVALID_ARGUMENT, `tool '${name}' needs a description`, {
      tool: name,
    });
  }
  if (!sideEffects.includes(sideEffect)) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `tool '${name}' declares side effect ${JSON.stringify(sideEffect)}; use one of ${sideEffects.join(', ')}`,
      { tool: name, actual: String(sideEffect) },
    );
  }
  if (typeof run !== 'function') {
    throw new LoomError(AgentErrorCode.INVALID_ARGUMENT, `tool '${name}' has no run function`, {
      tool: name,
    });
  }
  const timeoutMs = definition.timeoutMs ?? toolTimeoutMsDefault;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `tool '${name}': timeoutMs must be a positive whole number of milliseconds, got ${timeoutMs}`,
      { tool: name, actual: timeoutMs },
    );
  }
  const compiled = compileInput(name, definition.input, definition.jsonSchema);
  return Object.freeze({
    name,
    description,
    sideEffect,
    timeoutMs,
    inputSchema: compiled.jsonSchema,
    run,
    checkInput: compiled.check,
  });
}
