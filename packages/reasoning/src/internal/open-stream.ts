import type { ModelDelta, ModelProvider, ModelRequest } from '../model-provider.js';

/** A stream whose first delta has arrived: the point after which nobody may fall back or retry. */
export interface OpenedStream {
  first: ModelDelta;
  rest: AsyncIterator<ModelDelta>;
}

/**
 * Starts `provider.stream(request)` and waits for its first delta. A failure before it rejects
 * here, where a retry or a fallback can still act; a stream that ends without any delta is
 * reported as `undefined` (a provider bug the caller turns into an error).
 */
export async function openStream(
  provider: ModelProvider,
  request: ModelRequest,
): Promise<OpenedStream | undefined> {
  const rest = provider.stream(request)[Symbol.asyncIterator]();
  const first = await rest.next();
  return first.done === true ? undefined : { first: first.value, rest };
}

/** Yields the first delta, then the rest; returning early closes the underlying stream. */
export async function* continueStream(opened: OpenedStream): AsyncGenerator<ModelDelta> {
  let done = false;
  try {
    yield opened.first;
    for (;;) {
      const next = await opened.rest.next();
      if (next.done === true) {
        done = true;
        return;
      }
      yield next.value;
    }
  } finally {
    if (!done) await opened.rest.return?.();
  }
}
