/**
 * `@loom/reasoning/ai-sdk`: the adapter that makes any Vercel AI SDK language model a Loom
 * provider. A separate entry point, so a user without the AI SDK never loads it.
 */
export type {
  AiSdkCallOptions,
  AiSdkContent,
  AiSdkFinishReason,
  AiSdkGenerateResult,
  AiSdkLanguageModel,
  AiSdkStreamPart,
  AiSdkUsage,
} from './ai-sdk/ai-sdk-model.js';
export {
  type AiSdkProviderOptions,
  defaultModelTimeoutMs,
  fromAiSdk,
} from './ai-sdk/ai-sdk-provider.js';
export { retryAfterOf } from './ai-sdk/map-ai-sdk-error.js';
