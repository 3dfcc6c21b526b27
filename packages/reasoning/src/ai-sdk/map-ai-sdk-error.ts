import { isLoomError, LoomError, ReasoningErrorCode } from '../errors.js';

/** Which side of the response an error happened on: a cut after the headers is a bad response. */
export type CallPhase = 'request' | 'body';

interface Where {
  provider: string;
  model: string;
  nowMs: number;
}

const bodyExcerptMax = 2_000;
const networkCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);
const requestErrorNames = new Set([
  'AI_InvalidPromptError',
  'AI_UnsupportedFunctionalityError',
  'AI_InvalidArgumentError',
  'AI_LoadAPIKeyError',
  'AI_TooManyEmbeddingValuesForCallError',
]);
const responseErrorNames = new Set([
  'AI_JSONParseError',
  'AI_TypeValidationError',
  'AI_InvalidResponseDataError',
  'AI_EmptyResponseBodyError',
  'AI_NoContentGeneratedError',
]);

/**
 * Maps whatever an AI SDK model threw (or put in an `error` stream part) to a `LoomError` with a
 * `MODEL_*` code. Matches on the error's `name` and fields, never on `instanceof`, so any copy of
 * `@ai-sdk/provider` is understood.
 */
export function mapAiSdkError(error: unknown, phase: CallPhase, where: Where): LoomError {
  if (isLoomError(error)) return error;
  const name = (error as { name?: unknown } | null)?.name;
  const facts = { provider: where.provider, model: where.model };
  if (name === 'AI_APICallError') return fromApiCallError(error as ApiCallErrorShape, where);
  if (typeof name === 'string' && responseErrorNames.has(name)) {
    return new LoomError(
      ReasoningErrorCode.MODEL_BAD_RESPONSE,
      `${where.provider} answered something that is not its API's format: ${messageOf(error)}`,
      facts,
      error,
    );
  }
  if (typeof name === 'string' && requestErrorNames.has(name)) {
    return new LoomError(
      ReasoningErrorCode.MODEL_BAD_REQUEST,
      `${where.provider} cannot take this request: ${messageOf(error)}`,
      facts,
      error,
    );
  }
  const streamError = fromStreamErrorObject(error, where);
  if (streamError !== undefined) return streamError;
  if (isNetworkError(error)) {
    return phase === 'request'
      ? new LoomError(
          ReasoningErrorCode.MODEL_UNAVAILABLE,
          `cannot reach ${where.provider}: ${messageOf(error)}; it is retried, or the router moves on`,
          facts,
          error,
        )
      : new LoomError(
          ReasoningErrorCode.MODEL_BAD_RESPONSE,
          `the response of ${where.provider} was cut off before its end: ${messageOf(error)}`,
          facts,
          error,
        );
  }
  return new LoomError(
    ReasoningErrorCode.MODEL_BAD_RESPONSE,
    `${where.provider} failed in a way Loom does not classify: ${messageOf(error)}`,
    facts,
    error,
  );
}

interface ApiCallErrorShape {
  message?: string;
  statusCode?: number;
  responseHeaders?: Record<string, string>;
  responseBody?: string;
  isRetryable?: boolean;
}

function fromApiCallError(error: ApiCallErrorShape, where: Where): LoomError {
  const status = error.statusCode;
  const facts = { provider: where.provider, model: where.model };
  const message = messageOf(error);
  if (status === undefined) {
    // No status: the request never got an answer (refused, reset, DNS).
    return new LoomError(
      ReasoningErrorCode.MODEL_UNAVAILABLE,
      `cannot reach ${where.provider}: ${message}; it is retried, or the router moves on`,
      facts,
      error,
    );
  }
  if (status === 429) {
    const retryAfterMs = retryAfterOf(error.responseHeaders ?? {}, where.nowMs);
    return new LoomError(
      ReasoningErrorCode.MODEL_RATE_LIMITED,
      `${where.provider} is rate limiting (HTTP 429)${retryAfterMs === undefined ? '' : `; it asks to wait ${retryAfterMs} ms`}`,
      { ...facts, status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) },
      error,
    );
  }
  if (status >= 500 || status === 408 || status === 409) {
    // A 503 or 529 may say when to come back; withRetry honours it as it does a 429's.
    const retryAfterMs =
      status === 503 || status === 529
        ? retryAfterOf(error.responseHeaders ?? {}, where.nowMs)
        : undefined;
    return new LoomError(
      ReasoningErrorCode.MODEL_UNAVAILABLE,
      `${where.provider} could not serve the request (HTTP ${status}): ${message}${retryAfterMs === undefined ? '' : `; it asks to wait ${retryAfterMs} ms`}`,
      { ...facts, status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) },
      error,
    );
  }
  if (status >= 400) {
    const body = (error.responseBody ?? '').slice(0, bodyExcerptMax);
    return new LoomError(
      ReasoningErrorCode.MODEL_BAD_REQUEST,
      `${where.provider} refused the request (HTTP ${status}): ${message}; fix the request, the key or the model id: retrying cannot help`,
      { ...facts, status, body },
      error,
    );
  }
  // A 2xx the provider package could not read (invalid JSON, a body that fails its schema).
  return new LoomError(
    ReasoningErrorCode.MODEL_BAD_RESPONSE,
    `${where.provider} answered HTTP ${status} with a body that is not its API's format: ${message}`,
    { ...facts, status },
    error,
  );
}

/**
 * The wait a 429 (or a 503/529) asks for: `retry-after-ms` (milliseconds, OpenAI's), else
 * `retry-after` in seconds or as an HTTP date (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`).
 * Only plain non-negative decimals are numbers: `-5`, `1e3`, `0x10` or `5abc` are not, and
 * `Date.parse` (which reads far more than HTTP dates) sees only IMF-fixdate strings. Undefined
 * when absent or unreadable.
 */
export function retryAfterOf(headers: Record<string, string>, nowMs: number): number | undefined {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const ms = decimalOf(lower['retry-after-ms']);
  if (ms !== undefined) return Math.ceil(ms);
  const header = lower['retry-after'];
  if (header === undefined) return undefined;
  const seconds = decimalOf(header);
  if (seconds !== undefined) return Math.ceil(seconds * 1_000);
  if (!imfFixdate.test(header.trim())) return undefined;
  const dateMs = Date.parse(header);
  return Number.isNaN(dateMs) ? undefined : Math.max(0, dateMs - nowMs);
}

const decimal = /^\d+(\.\d+)?$/;
const imfFixdate =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

function decimalOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (!decimal.test(trimmed)) return undefined;
  const number = Number(trimmed);
  return Number.isFinite(number) ? number : undefined;
}

/** Anthropic (and others) send errors inside the stream as `{ type: 'overloaded_error', … }`. */
function fromStreamErrorObject(error: unknown, where: Where): LoomError | undefined {
  if (typeof error !== 'object' || error === null || error instanceof Error) return undefined;
  const type = (error as { type?: unknown }).type;
  const facts = { provider: where.provider, model: where.model };
  const text = `${where.provider} sent an error in its stream: ${safeJson(error)}`;
  if (type === 'overloaded_error' || type === 'api_error') {
    return new LoomError(ReasoningErrorCode.MODEL_UNAVAILABLE, text, facts, error);
  }
  if (type === 'rate_limit_error') {
    return new LoomError(ReasoningErrorCode.MODEL_RATE_LIMITED, text, facts, error);
  }
  return new LoomError(ReasoningErrorCode.MODEL_BAD_RESPONSE, text, facts, error);
}

function isNetworkError(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let current = error; current instanceof Error && !seen.has(current); ) {
    seen.add(current);
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && networkCodes.has(code)) return true;
    if (current instanceof TypeError && /^(fetch failed|terminated)$/i.test(current.message)) {
      return true;
    }
    current = current.cause;
  }
  return false;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : safeJson(error);
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, bodyExcerptMax) ?? String(value);
  } catch {
    return String(value);
  }
}
