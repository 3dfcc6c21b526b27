import type { JsonValue } from '@loom/event-runtime';
import { type Agent, agentFlowName } from './define-agent.js';
import { defineTool, type Tool, type ToolInput } from './define-tool.js';
import { AgentErrorCode, LoomError } from './errors.js';
import type { TerminalReason } from './run-result.js';
import type { SideEffect } from './side-effect.js';

/** What `agentTool` takes besides the agent. */
export interface AgentToolOptions {
  /** The name the model calls. Default: the agent's name, with each `.` as `_`. */
  name?: string;
  /** What the agent does, for the model. Default: "Hand a task to the agent '<name>' …". */
  description?: string;
  /**
   * For the policy. Default `idempotent`: the child run is started once per call, whatever
   * crashes (its id is the call's), so calling the tool again after a crash only observes it.
   * The child agent's own tools still go through its own policy.
   */
  sideEffect?: SideEffect;
  /**
   * The arguments' schema; the child run's input is the arguments as the model gave them.
   * Default `{ task: string }`, and the child's input is the `task` string (what
   * `agents.start(agent, 'the task')` would take).
   */
  input?: ToolInput;
  /**
   * What the parent's model sees of the child run's end, instead of the whole
   * {@link AgentToolResult} (say, only its `output`, or a summary). It runs again whenever the
   * parent's turn is replayed (a restart, a resume), so it must be a pure function of the result:
   * no clock, no I/O, the same JSON for the same result. A mapping that throws makes the call a
   * `tool_error` the model sees. The run's stream (`tool_completed`) still carries the whole result.
   */
  result?: (result: AgentToolResult) => JsonValue;
}

/** What the model gets back from an agent tool: how the child run ended. */
export interface AgentToolResult {
  /** The child run's id: `<parent run>/<turn>.<call>`; attach to it, stream it, read its log. */
  readonly runId: string;
  readonly reason: TerminalReason;
  /** Its answer, for `goal_completed`. */
  readonly output?: JsonValue;
  /** Why it ended otherwise. */
  readonly error?: string;
  readonly turns: number;
}

/** What the agent loop needs to run an agent tool's call as a child run. */
export interface ChildAgentCall {
  readonly agent: Agent;
  readonly flowName: string;
  /** The child run's input from the validated arguments. */
  readonly inputOf: (args: JsonValue) => JsonValue;
  /** What the parent's model sees of how the child ended (`AgentToolOptions.result`). */
  readonly resultOf: ((result: AgentToolResult) => JsonValue) | undefined;
}

const defaultInput: ToolInput = {
  type: 'object',
  properties: {
    task: { type: 'string', description: 'The task, self-contained: the agent sees nothing else' },
  },
  required: ['task'],
  additionalProperties: false,
};

/** The agent tools defineTool made: the tool object → how its calls start a child run. */
const childCalls = new WeakMap<object, ChildAgentCall>();

/** The child run an agent tool starts, or undefined for any other tool. */
export function childAgentCall(tool: object): ChildAgentCall | undefined {
  return childCalls.get(tool);
}

/**
 * Makes an agent a tool of another agent. A call runs the agent as a durable **child run** of
 * the calling run (the flow runtime's `ctx.child`): the child is its own execution, linked to
 * its parent, started once whatever crashes (its id is `<parent run>/<turn>.<call>`); a parent
 * that restarts observes the child's result instead of starting it again. The model gets an
 * {@link AgentToolResult}. The child agent is registered along with its parent by
 * `createAgentRuntime`. The tool's `timeoutMs` does not apply: the child's own limits bound it.
 *
 * Error codes: `INVALID_ARGUMENT` (those of `defineTool`, for the name and options).
 *
 * @example
 * const research = agentTool(researcher, { description: 'Research a question on the web' });
 * const writer = defineAgent({ name: 'writer', model, instructions: 'Write the report.', tools: [research] });
 * const agents = createAgentRuntime({ flows, agents: [writer] }); // researcher is registered too
 */
export function agentTool(
  agent: Agent,
  options: AgentToolOptions = {},
): Tool<JsonValue, JsonValue> {
  if (typeof agent?.name !== 'string' || typeof agent.instructions !== 'string') {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      'agentTool takes an agent made by defineAgent',
      {},
    );
  }
  const name = options.name ?? agent.name.replaceAll('.', '_').slice(0, 64);
  if (options.result !== undefined && typeof options.result !== 'function') {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `agentTool '${name}': result must be a function of the child's AgentToolResult`,
      { tool: name },
    );
  }
  const tool = defineTool({
    name,
    description:
      options.description ??
      `Hand a task to the agent '${agent.name}' and wait for it to finish; you get how its run ended and its answer.`,
    input: options.input ?? defaultInput,
    sideEffect: options.sideEffect ?? 'idempotent',
    run: async () => {
      throw new LoomError(
        AgentErrorCode.INVALID_ARGUMENT,
        `tool '${name}' runs the agent '${agent.name}' as a child run: it is called by an agent run, not directly`,
        { tool: name },
      );
    },
  });
  childCalls.set(tool, {
    agent,
    flowName: agentFlowName(agent),
    inputOf:
      options.input === undefined ? (args) => (args as { task: string }).task : (args) => args,
    resultOf: options.result,
  });
  return tool;
}
