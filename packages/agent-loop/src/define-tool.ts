import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { JsonValue } from '@loom/event-runtime';
import type { JsonSchema } from '@loom/reasoning';
import { AgentErrorCode, LoomError } from './errors.js';
import { IsolatePool } from './internal/isolate-pool.js';
import {
  type CompiledInput,
  compileInput,
  type StandardSchemaLike,
} from './internal/tool-input.js';
import { isRerunnable, type SideEffect, sideEffects } from './side-effect.js';
import { checkToolRetry, type ToolRetry } from './tool-retry.js';

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

/** Most children an isolated tool keeps warm: 16 (each is a Node process, tens of MB). */
export const isolateWarmMax = 16;

/** Where an isolated tool's code lives, and how many child processes to keep ready. */
export interface IsolateOptions {
  /**
   * The module whose named export `run(input, context)` does the work, as a `file:` URL or an
   * absolute path (`new URL('./resize.js', import.meta.url)`). It is loaded in the child, never
   * in this process. `context` is an {@link IsolatedToolContext}; the output must be JSON.
   */
  module: string | URL;
  /**
   * Children kept spawned with the module loaded (`agents.warm()` spawns them; each call takes
   * one and a replacement is spawned behind it), so a call skips the spawn and the load. Default
   * 0: each call spawns its child. At most {@link isolateWarmMax}.
   */
  warm?: number;
  /** Node flags of the child, e.g. `['--import', 'tsx']` for a TypeScript module. Default none. */
  execArgv?: readonly string[];
}

/**
 * What an isolated tool's `run` gets in its child: the {@link ToolContext} without `signal`. A
 * cancel, a timeout or a shutdown kills the child (SIGKILL) instead of asking it to stop.
 */
export type IsolatedToolContext = Omit<ToolContext, 'signal'>;

/** The child processes of an isolated tool. */
export interface ToolIsolate {
  /** The module's `file:` URL. */
  readonly module: string;
  /**
   * Spawns the tool's `warm` children and waits until each has loaded the module.
   * Error codes: `TOOL_ISOLATE_MODULE_INVALID`, `TOOL_ISOLATE_CRASHED`.
   */
  warm(): Promise<void>;
  /** Kills every child of the tool, warm or running a call, and waits until they are gone. */
  close(): Promise<void>;
}

/** What `defineTool` takes: a tool that runs here (`run`) or in a child process (`isolate`). */
export type ToolDefinition<
  S extends ToolInput = ToolInput,
  O extends JsonValue = JsonValue,
> = ToolDefinitionBase<S> &
  (
    | {
        /** Does the work. A throw (or a timeout) becomes a `tool_error` observation. The output must be JSON. */
        run(input: ToolInputOf<S>, context: ToolContext): Promise<O>;
        isolate?: undefined;
      }
    | {
        /**
         * Runs each call in a fresh child process (`child_process.fork`) that loads `module`.
         * A child that dies (exit, signal, uncaught throw) is a `TOOL_ISOLATE_CRASHED` tool error.
         */
        isolate: IsolateOptions;
        run?: undefined;
      }
  );

/** What every tool definition has. */
export interface ToolDefinitionBase<S extends ToolInput = ToolInput> {
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
  /** Default {@link toolTimeoutMsDefault}. */
  timeoutMs?: number;
  /**
   * How a failed or timed-out call is retried; overrides the agent's `toolRetry`, `false` turns
   * retries off. Only a `read_only` or `idempotent` tool may retry: on any other class a policy
   * is refused (`INVALID_ARGUMENT`), since its call must never run twice by itself. The flow
   * runtime's `stepRetry` never applies to a tool. Default: the agent's `toolRetry`.
   */
  retry?: ToolRetry | false;
}

/** A checked tool, ready for an agent. */
export interface Tool<I = JsonValue, O extends JsonValue = JsonValue> {
  readonly name: string;
  readonly description: string;
  readonly sideEffect: SideEffect;
  readonly timeoutMs: number;
  /** The JSON Schema of the input, as the model sees it. */
  readonly inputSchema: JsonSchema;
  /** The tool's own retry policy (`read_only` and `idempotent` tools only); absent: the agent's. */
  readonly retry?: ToolRetry | false;
  run(input: I, context: ToolContext): Promise<O>;
  /** The tool's child processes, when it is isolated. */
  readonly isolate?: ToolIsolate;
  /** @internal Checks an input; undefined when valid, else a message for the model. */
  readonly checkInput: CompiledInput['check'];
}

/**
 * Defines a tool an agent may call. The input schema is compiled once here: a Standard Schema
 * converts itself to the JSON Schema the model sees (zod 4: `~standard.jsonSchema`), a JSON
 * Schema is used as it is. Arguments are validated before the policy sees the call.
 *
 * With `isolate` instead of `run`, each call runs in a child process that loads the module
 * (see {@link IsolateOptions}).
 *
 * Error codes: `INVALID_ARGUMENT` (a bad name, an unknown side-effect class, a schema that
 * cannot be shown to the model, a bad `timeoutMs`, both or neither of `run` and `isolate`, a
 * module that is not a `file:` URL or an absolute path, a bad `warm`, a bad `retry` or a `retry`
 * on a tool that is not `read_only` or `idempotent`).
 *
 * @example
 * const lookup = defineTool({
 *   name: 'lookup_order',
 *   description: 'Look an order up by id',
 *   input: z.object({ id: z.string() }),
 *   sideEffect: 'read_only',
 *   run: async ({ id }) => orders.get(id), // id: string, from the schema
 * });
 * const thumbnail = defineTool({
 *   name: 'make_thumbnail',
 *   description: 'Make a thumbnail of an image file',
 *   input: z.object({ path: z.string() }),
 *   sideEffect: 'local_mutation',
 *   isolate: { module: new URL('./make-thumbnail.js', import.meta.url), warm: 1 }, // exports run
 * });
 */
export function defineTool<S extends ToolInput, O extends JsonValue = JsonValue>(
  definition: ToolDefinition<S, O>,
): Tool<ToolInputOf<S>, O> {
  const { name, description, sideEffect } = definition;
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
  if ((definition.run === undefined) === (definition.isolate === undefined)) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `tool '${name}' needs either a run function or isolate: { module }, not ${definition.run === undefined ? 'neither' : 'both'}`,
      { tool: name },
    );
  }
  if (definition.run !== undefined && typeof definition.run !== 'function') {
    throw new LoomError(AgentErrorCode.INVALID_ARGUMENT, `tool '${name}': run is not a function`, {
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
  const retry =
    definition.retry === undefined
      ? undefined
      : checkToolRetry(`tool '${name}'`, 'retry', definition.retry);
  if (retry !== undefined && retry !== false && !isRerunnable(sideEffect)) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `tool '${name}' is ${sideEffect}: it never retries by itself (a second call could repeat its side effect); drop retry, or declare it idempotent if a repeat is harmless`,
      { tool: name, path: 'retry', actual: sideEffect },
    );
  }
  const compiled = compileInput(name, definition.input, definition.jsonSchema);
  const base = {
    name,
    description,
    sideEffect,
    timeoutMs,
    ...(retry === undefined ? {} : { retry }),
    inputSchema: compiled.jsonSchema,
    checkInput: compiled.check,
  };
  if (definition.isolate === undefined) {
    return Object.freeze({ ...base, run: definition.run as Tool<ToolInputOf<S>, O>['run'] });
  }
  const isolate = isolatedRunner(name, definition.isolate);
  return Object.freeze({
    ...base,
    isolate: isolate.handle,
    run: isolate.run as Tool<ToolInputOf<S>, O>['run'],
  });
}

/** The pool of an isolated tool, and the `run` that hands each call to a child. */
function isolatedRunner(
  tool: string,
  options: IsolateOptions,
): { handle: ToolIsolate; run: (input: unknown, context: ToolContext) => Promise<unknown> } {
  const module = moduleUrl(tool, options?.module);
  const warm = options.warm ?? 0;
  if (!Number.isSafeInteger(warm) || warm < 0 || warm > isolateWarmMax) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `tool '${tool}': isolate.warm must be a whole number from 0 to ${isolateWarmMax}, got ${warm}`,
      { tool, actual: warm },
    );
  }
  const execArgv = options.execArgv ?? [];
  if (!Array.isArray(execArgv) || execArgv.some((flag) => typeof flag !== 'string')) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `tool '${tool}': isolate.execArgv must be an array of strings`,
      { tool },
    );
  }
  const pool = new IsolatePool({ tool, module, warm, execArgv: [...execArgv] });
  return {
    handle: Object.freeze({
      module,
      warm: () => pool.warm(),
      close: () => pool.close(),
    }),
    run: (input, context) =>
      pool.call(
        input,
        {
          runId: context.runId,
          turn: context.turn,
          callId: context.callId,
          idempotencyKey: context.idempotencyKey,
        },
        context.signal,
      ),
  };
}

function moduleUrl(tool: string, module: unknown): string {
  if (module instanceof URL && module.protocol === 'file:') return module.href;
  if (typeof module === 'string' && module.startsWith('file:')) return new URL(module).href;
  if (typeof module === 'string' && isAbsolute(module)) return pathToFileURL(module).href;
  throw new LoomError(
    AgentErrorCode.INVALID_ARGUMENT,
    `tool '${tool}': isolate.module must be a file: URL or an absolute path (new URL('./tool.js', import.meta.url)), got ${String(module)}`,
    { tool, actual: String(module) },
  );
}
