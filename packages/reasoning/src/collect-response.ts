import { LoomError, ReasoningErrorCode } from './errors.js';
import type { ModelDelta, ModelResponse } from './model-provider.js';

/**
 * Reads a stream to its end and returns the response of its `finish` delta: what `generate`
 * would have returned.
 *
 * Error codes: the stream's own; `MODEL_BAD_RESPONSE` when it ends without a `finish` delta.
 *
 * @example
 * const response = await collectResponse(provider.stream(request));
 */
export async function collectResponse(stream: AsyncIterable<ModelDelta>): Promise<ModelResponse> {
  for await (const delta of stream) {
    if (delta.type === 'finish') return delta.response;
  }
  throw new LoomError(
    ReasoningErrorCode.MODEL_BAD_RESPONSE,
    'the stream ended without its finish delta',
  );
}
