export type {
  AssistantNode,
  BlueprintNode,
  ConversationNode,
  Exchange,
  GroupNode,
  HistoryNode,
  HistoryStep,
  Observation,
  PartOptions,
  SystemNode,
  ToolsNode,
  UserNode,
} from './blueprint.js';
export {
  defaultObservation,
  type ObservationOptions,
  type ObservationRenderer,
} from './default-observation.js';
export { isLoomError, LoomError, RenderErrorCode, type RenderErrorFields } from './errors.js';
export { RenderLimits } from './limits.js';
export { type HistoryOptions, renderHistory } from './render-history.js';
export {
  type DroppedPart,
  type RenderOptions,
  type RenderResult,
  renderMessages,
} from './render-messages.js';
export { approximateTokenizer, type Tokenizer } from './tokenizer.js';
export { type BlueprintVisitor, traverseBlueprint } from './traverse-blueprint.js';
