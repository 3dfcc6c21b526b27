export type {
  AgentEvent,
  AgentEventBase,
  AgentEventType,
  AgentStream,
  StreamOptions,
} from './agent-event.js';
export {
  type AgentRun,
  AgentRuntime,
  type AgentRuntimeOptions,
  type ApproveOptions,
  answerSignalPrefix,
  approvalSignalPrefix,
  approvalsOf,
  createAgentRuntime,
  questionsOf,
  type RejectOptions,
} from './agent-runtime.js';
export { threadIdLengthMax } from './agent-thread.js';
export { type AgentToolOptions, type AgentToolResult, agentTool } from './agent-tool.js';
export {
  type Approval,
  type ApprovalDecision,
  type ApprovalKind,
  type ApprovalStatus,
  decisionRefusal,
  type Resolution,
} from './approval.js';
export {
  type Agent,
  type AgentDefinition,
  type AgentLimits,
  agentFlowName,
  askHumanToolName,
  budgetTokensDefault,
  consecutiveToolFailuresMaxDefault,
  defaultPrompt,
  defineAgent,
  failToolName,
  type PromptParts,
  repeatedCallsMaxDefault,
  stepsMaxDefault,
} from './define-agent.js';
export {
  defineTool,
  type IsolatedToolContext,
  type IsolateOptions,
  isolateWarmMax,
  type Tool,
  type ToolContext,
  type ToolDefinition,
  type ToolDefinitionBase,
  type ToolInput,
  type ToolInputOf,
  type ToolIsolate,
  toolTimeoutMsDefault,
} from './define-tool.js';
export { AgentErrorCode, isLoomError, LoomError, type LoomErrorFields } from './errors.js';
export { type ForkRerun, forkReruns } from './fork-reruns.js';
export { globalTracer } from './global-tracer.js';
export { AgentSpanAttribute } from './internal/agent-spans.js';
export { callOfEvent } from './internal/run-memory.js';
export {
  type ApprovalExpiry,
  asksMaxDefault,
  defaultPolicy,
  type Policy,
  type PolicyDecision,
  type ToolRequest,
} from './policy.js';
export type { Answer, Question } from './question.js';
export type { ModelCallUsage, RunResult, TerminalReason, UsageTotals } from './run-result.js';
export type { RunView, TurnView } from './run-view.js';
export { isRerunnable, type SideEffect, sideEffects } from './side-effect.js';
export {
  type AgentThread,
  type SendOptions,
  type ThreadBusy,
  type ThreadMessage,
  type ThreadOptions,
  type ThreadTurn,
  threadHistoryExchangesMax,
  threadMessagesMax,
} from './thread.js';
export type { ToolRetry } from './tool-retry.js';
export type { AgentTransition } from './transition.js';
export {
  type AgentRunResponseOptions,
  agentRunResponse,
  type RunStreams,
  uiMessageStreamHeader,
} from './ui/agent-run-response.js';
export { nodeListener } from './ui/node-listener.js';
export {
  chatBodyBytesMax,
  type ThreadChatHandlerOptions,
  type ThreadChats,
  threadChatHandler,
} from './ui/thread-chat-handler.js';
export type { UiMessageChunk } from './ui/ui-message-chunk.js';
