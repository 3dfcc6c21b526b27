/**
 * The part of the AI SDK's provider specification (`@ai-sdk/provider`, `LanguageModelV3` and
 * `LanguageModelV4`) that the adapter uses, declared structurally so that `@loom/reasoning`
 * never loads, or needs the types of, the AI SDK. A model of any AI SDK provider package is
 * assignable to {@link AiSdkLanguageModel}.
 */

/** Token counts as the specification reports them (`undefined` = not reported). */
export interface AiSdkUsage {
  inputTokens: { total: number | undefined; cacheRead?: number | undefined };
  outputTokens: { total: number | undefined };
}

/** The specification's finish reason (v3 and v4): a unified value and the provider's raw one. */
export interface AiSdkFinishReason {
  unified: string;
  raw?: string | undefined;
}

/** One piece of generated content (text, a tool call, and kinds the adapter ignores). */
export interface AiSdkContent {
  type: string;
  text?: string;
  toolCallId?: string;
  toolName?: string;
  input?: unknown;
  providerExecuted?: boolean;
}

/** What `doGenerate` resolves to. */
export interface AiSdkGenerateResult {
  content: readonly AiSdkContent[];
  finishReason: AiSdkFinishReason;
  usage: AiSdkUsage;
  response?: { modelId?: string | undefined } | undefined;
}

/** One part of a `doStream` stream. */
export interface AiSdkStreamPart {
  type: string;
  id?: string;
  delta?: string;
  toolName?: string;
  toolCallId?: string;
  input?: unknown;
  providerExecuted?: boolean;
  modelId?: string | undefined;
  usage?: AiSdkUsage;
  finishReason?: AiSdkFinishReason;
  error?: unknown;
}

/** The call options the adapter sends (a subset of the specification's). */
export interface AiSdkCallOptions {
  prompt: unknown[];
  tools?: unknown[];
  toolChoice?: unknown;
  maxOutputTokens?: number;
  temperature?: number;
  /** Structured output: a JSON answer that fits `schema`. */
  responseFormat?:
    | { type: 'text' }
    | { type: 'json'; schema?: object; name?: string; description?: string };
  abortSignal?: AbortSignal;
  headers?: Record<string, string | undefined>;
  providerOptions?: Record<string, Record<string, unknown>>;
}

/** A language model of any AI SDK provider package (specification v3 or v4). */
export interface AiSdkLanguageModel {
  readonly specificationVersion: 'v3' | 'v4';
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: AiSdkCallOptions): PromiseLike<AiSdkGenerateResult>;
  doStream(options: AiSdkCallOptions): PromiseLike<{ stream: ReadableStream<AiSdkStreamPart> }>;
}
