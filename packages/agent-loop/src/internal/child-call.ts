import { isLoomError as isKernelError, type JsonValue } from '@loom/event-runtime';
import type { Observation } from '@loom/render';
import type { AgentToolResult, ChildAgentCall } from '../agent-tool.js';
import type { ToolRequest } from '../policy.js';
import type { AgentTransition } from '../transition.js';
import type { TurnContext } from './flow-host.js';
import type { RunOutput } from './run-memory.js';

/**
 * An agent tool's call: the child agent's run, as a durable child of this run (`ctx.child`), its
 * id `<runId>/<key>`. Replayed, the child is neither started nor run again: its recorded end is
 * observed. A child that failed (its flow threw) or was cancelled is a `tool_error`.
 */
export async function runChildCall(
  ctx: TurnContext,
  notify: (transition: AgentTransition) => void,
  call: ChildAgentCall,
  request: ToolRequest,
  key: string,
  markedHere: () => boolean,
): Promise<{ kind: 'observed'; observation: Observation; failed: boolean }> {
  const childId = `${ctx.runId}/${key}`;
  // Only a process that wrote the start mark reports the start (a replay does not repeat it).
  if (markedHere()) {
    notify({
      type: 'tool_started',
      runId: ctx.runId,
      turn: request.turn,
      callId: request.callId,
      tool: request.tool,
    });
  }
  let ended: RunOutput;
  try {
    ended = (await ctx.child(
      call.flowName,
      call.inputOf(request.input),
      childId,
    )) as unknown as RunOutput;
  } catch (error) {
    if (!isKernelError(error, 'CHILD_FAILED')) throw error;
    return {
      kind: 'observed',
      observation: {
        kind: 'tool_error',
        callId: request.callId,
        message: `CHILD_FAILED: ${(error as Error).message}`,
      },
      failed: true,
    };
  }
  const result = agentToolResult(childId, ended);
  let content: JsonValue = result as unknown as JsonValue;
  if (call.resultOf !== undefined) {
    try {
      content = call.resultOf(result) ?? null;
    } catch (error) {
      return {
        kind: 'observed',
        observation: {
          kind: 'tool_error',
          callId: request.callId,
          message: `the result mapping of tool '${request.tool}' threw: ${error instanceof Error ? error.message : String(error)}`,
        },
        failed: true,
      };
    }
  }
  return {
    kind: 'observed',
    observation: { kind: 'tool_result', callId: request.callId, content },
    failed: ended.reason !== 'goal_completed',
  };
}

/** What the model (and a stream's `tool_completed`) gets from a child run's recorded output. */
export function agentToolResult(childId: string, ended: RunOutput): AgentToolResult {
  return {
    runId: childId,
    reason: ended.reason,
    ...(ended.output === undefined ? {} : { output: ended.output }),
    ...(ended.error === undefined ? {} : { error: ended.error }),
    turns: ended.turns,
  };
}
