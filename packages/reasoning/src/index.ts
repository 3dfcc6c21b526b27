export type {
  AssistantMessage,
  Json,
  JsonSchema,
  ModelMessage,
  SystemMessage,
  ToolCall,
  ToolChoice,
  ToolResultMessage,
  ToolSpec,
  UserMessage,
} from './model-types.js';
