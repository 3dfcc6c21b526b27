import type { FlowContext, KernelStepOptions } from '@loom/event-runtime';
import { LoomError, ReasoningErrorCode } from '../errors.js';
import type { ModelDelta, ModelProvider, ModelRequest, ModelResponse } from '../model-provider.js';

/** Options of {@link modelStep}. */
export interface ModelStepOptions extends KernelStepOptions {
  /**
   * Streams the call and hands each delta here as it arrives. Deltas are live only: the step
   * records the final response once, never a write per delta, and a replay calls nothing.
   */
  onDelta?: (delta: ModelDelta) => void;
}

/**
 * A model call as a durable step of a kernel flow: the response is recorded exactly as the
 * provider returned it (bad tool calls and problems included, before anyone validates it), and a
 * replay returns the recorded response without calling the model again. The step's signal
 * (cancel, lost ownership) aborts the call, as does `request.signal`.
 *
 * Error codes: those of `ctx.step` — `STEP_FAILED` wrapping the provider's `MODEL_*` error
 * (`fields.error.code`), `DUPLICATE_STEP_NAME`, `NON_DETERMINISM`, … — and `MODEL_BAD_RESPONSE`
 * (inside `STEP_FAILED`) for a stream that ended without its finish.
 *
 * @example
 * const flow = { name: 'ask', run: async (ctx, question: string) => {
 *   const answer = await modelStep(ctx, 'decide', provider, { messages: [{ role: 'user', content: question }] });
 *   return answer.text;
 * } };
 */
export function modelStep(
  ctx: FlowContext,
  name: string,
  provider: ModelProvider,
  request: ModelRequest,
  options: ModelStepOptions = {},
): Promise<ModelResponse> {
  const { onDelta, ...stepOptions } = options;
  return ctx.step(
    name,
    async (effect) => {
      const signal =
        request.signal === undefined
          ? effect.signal
          : AbortSignal.any([effect.signal, request.signal]);
      const call = { ...request, signal };
      if (onDelta === undefined) return provider.generate(call);
      for await (const delta of provider.stream(call)) {
        onDelta(delta);
        if (delta.type === 'finish') return delta.response;
      }
      throw new LoomError(
        ReasoningErrorCode.MODEL_BAD_RESPONSE,
        `the stream of ${provider.id} ended without its finish delta`,
        { provider: provider.id },
      );
    },
    stepOptions,
  );
}
