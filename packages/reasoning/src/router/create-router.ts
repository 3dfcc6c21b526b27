import { isLoomError, LoomError, ReasoningErrorCode } from '../errors.js';
import { continueStream, type OpenedStream, openStream } from '../internal/open-stream.js';
import type {
  FallbackRecord,
  ModelDelta,
  ModelProvider,
  ModelRequest,
  ModelResponse,
} from '../model-provider.js';
import { TagIndex } from './tag-index.js';

/** One route: a provider and the tags it serves. */
export interface Route {
  provider: ModelProvider;
  tags: readonly string[];
  /** The route's name in accounting. Default: the provider's id (`#2`, `#3`… on repeats). */
  id?: string;
}

/** A route as the router holds it, its id resolved. */
export interface ResolvedRoute {
  readonly id: string;
  readonly provider: ModelProvider;
  readonly tags: readonly string[];
}

/** A provider that picks one of its routes by the request's `tags`. */
export interface Router extends ModelProvider {
  /** The routes carrying every tag, in route order (all of them for no tags). Frozen. */
  candidates(tags: readonly string[]): readonly ResolvedRoute[];
  /** Warms the providers of the routes carrying `tags` (all routes without). */
  warm(tags?: readonly string[]): Promise<void>;
}

/** Options of {@link createRouter}. */
export interface RouterOptions {
  /**
   * Which failures move on to the next matching route. Default: `MODEL_UNAVAILABLE`,
   * `MODEL_RATE_LIMITED` and `MODEL_TIMEOUT`; anything else goes to the caller at once. An
   * error it lets through that is not a `LoomError` is recorded (and, from the last route,
   * thrown) as `MODEL_UNAVAILABLE`.
   */
  fallbackOn?: (error: unknown) => boolean;
}

function defaultFallbackOn(error: unknown): boolean {
  return (
    isLoomError(error, ReasoningErrorCode.MODEL_UNAVAILABLE) ||
    isLoomError(error, ReasoningErrorCode.MODEL_RATE_LIMITED) ||
    isLoomError(error, ReasoningErrorCode.MODEL_TIMEOUT)
  );
}

/**
 * A router over routes, looked up by tags through an index built once here. A call goes to the
 * first route carrying every tag of `request.tags`; when it fails with a fallback code it moves to
 * the next, and the answer's `fallbacks` records each route left and why; its `route` is the id
 * of the route that answered (the ids `fallbacks[].route` uses). A stream falls back
 * only before its first delta: after that, a failure goes to the caller.
 *
 * Error codes: `NO_ROUTE` (no route carries the tags; `fields.tags`); the last route's `MODEL_*`
 * error when every candidate failed (`fields.fallbacks`); `INVALID_ARGUMENT` for bad routes.
 *
 * @example
 * const router = createRouter([
 *   { provider: claude, tags: ['smart'] },
 *   { provider: local, tags: ['smart', 'cheap'] },
 * ]);
 * const answer = await router.generate({ messages, tags: ['smart'] });
 * console.log(answer.provider, answer.fallbacks);
 */
export function createRouter(routes: readonly Route[], options: RouterOptions = {}): Router {
  const resolved = resolveRoutes(routes);
  const index = new TagIndex(resolved, (route) => route.tags);
  const fallbackOn = options.fallbackOn ?? defaultFallbackOn;
  const id = `router(${resolved.map((route) => route.id).join(',')})`;

  const candidatesFor = (request: ModelRequest): readonly ResolvedRoute[] => {
    const tags = request.tags ?? [];
    const found = index.match(tags);
    if (found.length === 0) {
      throw new LoomError(
        ReasoningErrorCode.NO_ROUTE,
        `no route carries every tag of [${tags.join(', ')}]: add a route with these tags or ask for fewer`,
        { tags: [...tags] },
      );
    }
    return found;
  };

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    const fallbacks: FallbackRecord[] = [];
    let lastError: unknown;
    for (const route of candidatesFor(request)) {
      try {
        const response = await route.provider.generate(request);
        return { ...response, route: route.id, fallbacks: [...fallbacks, ...response.fallbacks] };
      } catch (error) {
        lastError = moveOnOrThrow(error, route, fallbacks, request, fallbackOn);
      }
    }
    throw allFailed(fallbacks, lastError, request);
  }

  async function* stream(request: ModelRequest): AsyncGenerator<ModelDelta> {
    const fallbacks: FallbackRecord[] = [];
    let lastError: unknown;
    let opened: OpenedStream | undefined;
    let route: ResolvedRoute | undefined;
    for (const candidate of candidatesFor(request)) {
      route = candidate;
      try {
        opened = await openStream(route.provider, request);
        if (opened !== undefined) break;
        throw new LoomError(
          ReasoningErrorCode.MODEL_BAD_RESPONSE,
          `the stream of ${route.id} ended without a single delta`,
          { provider: route.id },
        );
      } catch (error) {
        lastError = moveOnOrThrow(error, route, fallbacks, request, fallbackOn);
      }
    }
    if (opened === undefined || route === undefined) throw allFailed(fallbacks, lastError, request);
    for await (const delta of continueStream(opened)) {
      yield delta.type === 'finish'
        ? {
            type: 'finish',
            response: {
              ...delta.response,
              route: route.id,
              fallbacks: [...fallbacks, ...delta.response.fallbacks],
            },
          }
        : delta;
    }
  }

  return {
    id,
    generate,
    stream,
    candidates: (tags) => index.match(tags),
    warm: async (tags) => {
      const providers = new Set(index.match(tags ?? []).map((route) => route.provider));
      // Best effort: a warm-up that fails only means the first call opens its own connection.
      await Promise.allSettled([...providers].map((provider) => provider.warm?.()));
    },
  };
}

function moveOnOrThrow(
  error: unknown,
  route: ResolvedRoute,
  fallbacks: FallbackRecord[],
  request: ModelRequest,
  fallbackOn: (error: unknown) => boolean,
): unknown {
  if (request.signal?.aborted || !fallbackOn(error)) throw error;
  fallbacks.push({
    route: route.id,
    // A failure a custom fallbackOn moves on from that is no LoomError (a provider's own bug, a
    // plain Error) counts as the route being unavailable: the trail and the final error keep a
    // real, documented code.
    code: isLoomError(error) ? error.code : ReasoningErrorCode.MODEL_UNAVAILABLE,
    message: error instanceof Error ? error.message : String(error),
  });
  return error;
}

/** The last route's error, its code and facts kept (a caller may retry on them), with the trail. */
function allFailed(
  fallbacks: FallbackRecord[],
  lastError: unknown,
  request: ModelRequest,
): LoomError {
  const last = fallbacks.at(-1) as FallbackRecord;
  const fields = isLoomError(lastError) ? lastError.fields : {};
  return new LoomError(
    last.code as ReasoningErrorCode,
    `every route for tags [${(request.tags ?? []).join(', ')}] failed; the last, ${last.route}, with ${last.code}: ${last.message}`,
    { ...fields, provider: last.route, fallbacks: [...fallbacks] },
    lastError,
  );
}

function resolveRoutes(routes: readonly Route[]): ResolvedRoute[] {
  if (!Array.isArray(routes)) {
    throw new LoomError(
      ReasoningErrorCode.INVALID_ARGUMENT,
      'createRouter needs an array of routes',
      {
        option: 'routes',
      },
    );
  }
  const seen = new Map<string, number>();
  return routes.map((route, index) => {
    if (typeof route?.provider?.generate !== 'function' || !Array.isArray(route.tags)) {
      throw new LoomError(
        ReasoningErrorCode.INVALID_ARGUMENT,
        `route ${index} needs a provider and a tags array`,
        { option: `routes[${index}]` },
      );
    }
    const base = route.id ?? route.provider.id;
    const repeat = (seen.get(base) ?? 0) + 1;
    seen.set(base, repeat);
    return Object.freeze({
      id: repeat === 1 ? base : `${base}#${repeat}`,
      provider: route.provider,
      tags: Object.freeze([...route.tags]),
    });
  });
}
