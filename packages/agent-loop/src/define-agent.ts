import type { JsonValue } from '@loom/event-runtime';
import type { JsonSchema, ModelProvider, ToolSpec } from '@loom/reasoning';
import type { BlueprintNode, Exchange, HistoryStep } from '@loom/render';
import type { Tool, ToolInput, ToolInputOf } from './define-tool.js';
import { AgentErrorCode, LoomError } from './errors.js';
import { type CompiledInput, compileInput } from './internal/tool-input.js';
import { defaultPolicy, type Policy } from './policy.js';
import type { ThreadBusy, ThreadOptions } from './thread.js';
import { checkToolRetry, type ToolRetry } from './tool-retry.js';

/** Default turns a run may decide before it ends with `limit_steps`. */
export const stepsMaxDefault = 50;
/** Default tool failures in a row before a run ends with `limit_tool_failures`. */
export const consecutiveToolFailuresMaxDefault = 3;
/** Final answers an agent with an `output` schema may give before one fits: 3 (2 re-asks). */
export const outputAttemptsMaxDefault = 3;
/** Default times the same call may be asked for in a row; reaching it ends the run with `loop_detected`. */
export const repeatedCallsMaxDefault = 3;
/** Default token budget of a rendered prompt. */
export const budgetTokensDefault = 128_000;
/** The built-in tool through which the model asks a person (offered when `askHuman` is true); no user tool may take its name. */
export const askHumanToolName = 'ask_human';
/** The built-in tool through which the model gives up (`goal_failed`); no user tool may take its name. */
export const failToolName = 'fail_goal';

/** The limits of a run; each ending is typed (see `TerminalReason`). */
export interface AgentLimits {
  /** Turns (model calls); default {@link stepsMaxDefault}. */
  stepsMax?: number;
  /** Tool failures in a row; default {@link consecutiveToolFailuresMaxDefault}. */
  consecutiveToolFailuresMax?: number;
  /** The same call (tool + arguments) in a row; default {@link repeatedCallsMaxDefault}. */
  repeatedCallsMax?: number;
  /** Input + output tokens of all model calls; reaching it ends the run (`limit_tokens`). Default: no limit. */
  tokensMax?: number;
  /** Known cost of all model calls in USD; reaching it ends the run (`limit_cost`). Default: no limit. */
  costUsdMax?: number;
  /**
   * Final answers that did not fit the `output` schema before the run ends (`output_invalid`):
   * each one is re-asked with what was wrong; default {@link outputAttemptsMaxDefault}.
   */
  outputAttemptsMax?: number;
  /**
   * Wall time of the run in ms, from its start as recorded in its log, on the runtime's clock;
   * reaching it ends the run (`limit_time`): checked at each turn's start, and while the run
   * waits (a model call, an approval, a question). Default: no limit.
   */
  wallTimeMsMax?: number;
}

/** What the prompt of a turn is built from. */
export interface PromptParts {
  readonly instructions: string;
  readonly input: JsonValue;
  readonly tools: readonly ToolSpec[];
  /** The finished turns, oldest first. */
  readonly history: readonly HistoryStep[];
  /**
   * In a thread's turn, the thread's earlier exchanges, oldest first (each a user's message and
   * the steps that answered it), as many as fit `budgetTokens`; empty otherwise. `input` is the
   * message being answered.
   */
  readonly thread: readonly Exchange[];
}

/** What `defineAgent` takes (`S`: the `output` schema, if any). */
export interface AgentDefinition<S extends ToolInput | undefined = ToolInput | undefined> {
  /** 1–100 of `A-Za-z0-9._-`; the run's flow is `agent:<name>`. */
  name: string;
  /** Pinned at start: a run is only resumed by the same version. Default '1'. */
  version?: string;
  model: ModelProvider;
  /** The system prompt of the default blueprint. */
  instructions: string;
  tools: readonly Tool<never, JsonValue>[];
  /** Default {@link defaultPolicy}. */
  policy?: Policy;
  limits?: AgentLimits;
  /** Token budget of each rendered prompt; default {@link budgetTokensDefault}. */
  budgetTokens?: number;
  /**
   * Builds the blueprint of a turn's prompt. Default: the instructions (system), the tools, the
   * input as a user message, then the history (older turns drop first when over budget).
   */
  prompt?: (parts: PromptParts) => BlueprintNode;
  /** Tags for a router (`@loom/reasoning` `createRouter`). */
  tags?: readonly string[];
  /**
   * Offer the model the built-in tool `ask_human({ question })`: the run records the question
   * and waits (suspended, no lease) until `answer(questionId, …)` is called. Default false.
   */
  askHuman?: boolean;
  /**
   * How the calls of this agent's `read_only` and `idempotent` tools are retried when they throw
   * or time out (a tool's own `retry` overrides it). Calls of `local_mutation`,
   * `remote_mutation` and `destructive` tools never retry, whatever is set here or in the flow
   * runtime's `stepRetry`, which applies to no tool. Default `false`: no retries.
   */
  toolRetry?: ToolRetry | false;
  /**
   * Structured output: the final answer must be JSON that fits this schema (a Standard Schema,
   * zod, valibot, arktype, …, or a JSON Schema object, as a tool's `input`), and the run's
   * `output` is that JSON, typed by the schema. The model is told the schema (and asked for JSON
   * natively where its provider supports it: `ModelRequest.responseFormat`); an answer that is not
   * JSON or does not fit is re-asked, with what was wrong, up to `limits.outputAttemptsMax`
   * answers in all, each one recorded, then the run ends `output_invalid`.
   */
  output?: S;
  /** The JSON Schema the model sees, for an `output` Standard Schema that cannot convert itself. */
  outputJsonSchema?: JsonSchema;
  /**
   * How the agent's threads (`agents.thread(agent, threadId)`) take a message that arrives while
   * a turn runs: `busy: 'queue'` (the default), `'reject'` or `'interrupt'` (ADR 0049).
   */
  thread?: ThreadOptions;
}

/** What an agent's runs end with: the final text, or its `output` schema's type. */
export type AgentOutputOf<S> = S extends ToolInput
  ? unknown extends ToolInputOf<S>
    ? JsonValue
    : ToolInputOf<S>
  : string;

/** A checked agent definition (`O`: what a completed run's `output` is). */
export interface Agent<O = JsonValue> {
  readonly name: string;
  readonly version: string;
  readonly model: ModelProvider;
  readonly instructions: string;
  readonly tools: ReadonlyMap<string, Tool<never, JsonValue>>;
  readonly policy: Policy;
  readonly limits: Readonly<
    Required<Omit<AgentLimits, 'tokensMax' | 'costUsdMax' | 'wallTimeMsMax'>> & {
      tokensMax: number;
      costUsdMax: number;
      wallTimeMsMax: number;
    }
  >;
  readonly budgetTokens: number;
  readonly prompt: (parts: PromptParts) => BlueprintNode;
  readonly tags: readonly string[] | undefined;
  readonly askHuman: boolean;
  /** The retry of its `read_only` and `idempotent` tools' calls; `false`: none. */
  readonly toolRetry: ToolRetry | false;
  /** The `output` schema, compiled: what the model sees and the check of a final answer. */
  readonly output: CompiledInput | undefined;
  /** How its threads take a message that arrives while a turn runs. */
  readonly thread: Readonly<{ busy: ThreadBusy }>;
  /** Type-level only: what a completed run's `output` is. Never set. */
  readonly '~output'?: O;
}

/** A run's flow name: `agent:<name>`. */
export function agentFlowName(agent: Pick<Agent, 'name'>): string {
  return `agent:${agent.name}`;
}

const agentNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/**
 * The default blueprint: system instructions, tools, (in a thread's turn, the thread's earlier
 * exchanges,) the input, the history. Over budget, the thread's exchanges drop first, oldest
 * first, each whole; then this turn's older steps; the instructions, tools, the input and the
 * newest step stay.
 */
export function defaultPrompt(parts: PromptParts): BlueprintNode {
  const task = typeof parts.input === 'string' ? parts.input : JSON.stringify(parts.input);
  const user: BlueprintNode = { kind: 'user', text: task, required: true };
  return {
    kind: 'group',
    children: [
      { kind: 'system', text: parts.instructions, required: true },
      { kind: 'tools', tools: parts.tools, required: true },
      ...(parts.thread.length === 0
        ? [user]
        : [{ kind: 'conversation' as const, exchanges: parts.thread, priority: 0 }, user]),
      { kind: 'history', steps: parts.history, keepLast: 1, priority: 1 },
    ],
  };
}

const threadBusyValues: readonly ThreadBusy[] = ['queue', 'reject', 'interrupt'];

function positive(agent: string, option: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `agent '${agent}': ${option} must be a whole number ≥ 1, got ${value}`,
      { agent, option, actual: value },
    );
  }
  return value;
}

function threadBusy(agent: string, thread: ThreadOptions | undefined): ThreadBusy {
  const busy = thread?.busy ?? 'queue';
  if (!threadBusyValues.includes(busy)) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `agent '${agent}': thread.busy is 'queue', 'reject' or 'interrupt', got ${JSON.stringify(busy)}`,
      { agent, option: 'thread.busy', actual: String(busy) },
    );
  }
  return busy;
}

function budget(agent: string, value: number | undefined): number {
  if (value === undefined) return Number.POSITIVE_INFINITY;
  if (typeof value !== 'number' || !(value > 0)) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `agent '${agent}': costUsdMax must be a number of USD above 0, got ${value}`,
      { agent, option: 'costUsdMax', actual: String(value) },
    );
  }
  return value;
}

/**
 * Defines an agent: its model, tools, policy and limits. Register it with
 * `createAgentRuntime({ flows, agents: [agent] })` in every process that may run or resume it.
 *
 * Error codes: `INVALID_ARGUMENT` (a bad name, two tools of one name, a tool named
 * `fail_goal` or `ask_human`, a limit below 1, a bad `toolRetry`, a bad `thread.busy`).
 *
 * @example
 * const triage = defineAgent({ name: 'triage', model, instructions: 'Triage the ticket.', tools: [lookup] });
 */
export function defineAgent<const S extends ToolInput | undefined = undefined>(
  definition: AgentDefinition<S>,
): Agent<AgentOutputOf<S>> {
  const { name } = definition;
  if (typeof name !== 'string' || !agentNamePattern.test(name)) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `an agent name must be 1 to 100 letters, digits or . _ - (starting with a letter or digit), got ${JSON.stringify(name)}`,
      { actual: String(name) },
    );
  }
  if (typeof definition.model?.generate !== 'function') {
    throw new LoomError(AgentErrorCode.INVALID_ARGUMENT, `agent '${name}' needs a model provider`, {
      agent: name,
    });
  }
  const tools = new Map<string, Tool<never, JsonValue>>();
  for (const tool of definition.tools) {
    const builtIn = tool.name === failToolName || tool.name === askHumanToolName;
    if (builtIn || tools.has(tool.name)) {
      throw new LoomError(
        AgentErrorCode.INVALID_ARGUMENT,
        builtIn
          ? `agent '${name}': '${tool.name}' is the name of a built-in tool; rename your tool`
          : `agent '${name}' has two tools named '${tool.name}'`,
        { agent: name, tool: tool.name },
      );
    }
    tools.set(tool.name, tool);
  }
  const limits = definition.limits ?? {};
  const budgetTokens = definition.budgetTokens ?? budgetTokensDefault;
  if (budgetTokens !== Number.POSITIVE_INFINITY) positive(name, 'budgetTokens', budgetTokens);
  return Object.freeze({
    name,
    version: definition.version ?? '1',
    model: definition.model,
    instructions: definition.instructions,
    tools,
    policy: definition.policy ?? defaultPolicy,
    limits: Object.freeze({
      stepsMax: positive(name, 'stepsMax', limits.stepsMax ?? stepsMaxDefault),
      consecutiveToolFailuresMax: positive(
        name,
        'consecutiveToolFailuresMax',
        limits.consecutiveToolFailuresMax ?? consecutiveToolFailuresMaxDefault,
      ),
      repeatedCallsMax: positive(
        name,
        'repeatedCallsMax',
        limits.repeatedCallsMax ?? repeatedCallsMaxDefault,
      ),
      tokensMax:
        limits.tokensMax === undefined
          ? Number.POSITIVE_INFINITY
          : positive(name, 'tokensMax', limits.tokensMax),
      costUsdMax: budget(name, limits.costUsdMax),
      wallTimeMsMax:
        limits.wallTimeMsMax === undefined
          ? Number.POSITIVE_INFINITY
          : positive(name, 'wallTimeMsMax', limits.wallTimeMsMax),
      outputAttemptsMax: positive(
        name,
        'outputAttemptsMax',
        limits.outputAttemptsMax ?? outputAttemptsMaxDefault,
      ),
    }),
    budgetTokens,
    prompt: definition.prompt ?? defaultPrompt,
    tags: definition.tags,
    askHuman: definition.askHuman === true,
    toolRetry:
      definition.toolRetry === undefined
        ? false
        : checkToolRetry(`agent '${name}'`, 'toolRetry', definition.toolRetry),
    thread: Object.freeze({ busy: threadBusy(name, definition.thread) }),
    output:
      definition.output === undefined
        ? undefined
        : compileInput(name, definition.output, definition.outputJsonSchema, `agent '${name}'`, {
            schema: 'output',
            jsonSchema: 'outputJsonSchema',
          }),
  });
}
