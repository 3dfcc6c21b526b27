export type {
  BlueprintNode,
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
export { ErrorCode, isLoomError, LoomError, type LoomErrorFields } from './errors.js';
export { Limits } from './limits.js';
export { type HistoryOptions, renderHistory } from './render-history.js';
export {
  type DroppedPart,
  type RenderOptions,
  type RenderResult,
  renderMessages,
} from './render-messages.js';
export { approximateTokenizer, type Tokenizer } from './tokenizer.js';
export { type BlueprintVisitor, traverseBlueprint } from './traverse-blueprint.js';
