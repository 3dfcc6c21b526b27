export { collectResponse } from './collect-response.js';
export {
  isLoomError,
  isRetryableModelError,
  LoomError,
  ReasoningErrorCode,
  type ReasoningErrorFields,
} from './errors.js';
export { type ModelStepOptions, modelStep } from './flow/model-step.js';
export type {
  FallbackRecord,
  FinishReason,
  InvalidToolCall,
  ModelDelta,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ModelUsage,
  ResponseProblem,
} from './model-provider.js';
export type {
  AssistantMessage,
  JsonSchema,
  JsonValue,
  ModelMessage,
  SystemMessage,
  ToolCall,
  ToolChoice,
  ToolResultMessage,
  ToolSpec,
  UserMessage,
} from './model-types.js';
export { costUsd, type ModelPrice, type PriceTable } from './price-table.js';
export {
  defaultRetryAfterMsMax,
  type ModelRetryOptions,
  withRetry,
} from './retry/with-retry.js';
export {
  createRouter,
  type ResolvedRoute,
  type Route,
  type Router,
  type RouterOptions,
} from './router/create-router.js';
export { tagIndexCacheMax } from './router/tag-index.js';
export {
  advancingTimer,
  type StubFailure,
  StubModel,
  type StubModelOptions,
  type StubScript,
  type StubToolCall,
  type StubTurn,
  stubRequestsKept,
  stubTokens,
} from './stub/stub-model.js';
export type { SetTimer } from './time.js';
