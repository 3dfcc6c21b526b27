import type { Observation } from './blueprint.js';
import { LoomError, RenderErrorCode } from './errors.js';
import { RenderLimits } from './limits.js';

/** Options of {@link defaultObservation}. */
export interface ObservationOptions {
  /** Longest text kept, in UTF-16 code units, before the marker. Default `RenderLimits.observationCharsDefault`. */
  maxChars?: number;
}

/** Turns an observation into the text the model reads. */
export type ObservationRenderer = (observation: Observation) => string;

/**
 * Renders an observation as text for the model: a tool result's content as is when it is a
 * string, else as JSON; an error, a denial or an invalid decision with a short prefix that says
 * which. Text longer than `maxChars` keeps its head and ends with a marker that says how much
 * was cut: `[… truncated: 12000 of 28000 characters cut]`. The cut never splits a surrogate
 * pair, so the result is well-formed whenever the input was.
 *
 * Throws `INVALID_ARGUMENT` when `maxChars` is not a whole number ≥ 0.
 *
 * @example
 * defaultObservation({ kind: 'tool_result', callId: 'c1', content: { hits: 3 } }); // '{"hits":3}'
 */
export function defaultObservation(
  observation: Observation,
  options: ObservationOptions = {},
): string {
  const maxChars = options.maxChars ?? RenderLimits.observationCharsDefault;
  if (!Number.isSafeInteger(maxChars) || maxChars < 0) {
    throw new LoomError(
      RenderErrorCode.INVALID_ARGUMENT,
      `maxChars must be a whole number ≥ 0, got ${String(maxChars)}`,
      { option: 'maxChars' },
    );
  }
  return truncate(observationText(observation), maxChars);
}

function observationText(observation: Observation): string {
  switch (observation.kind) {
    case 'tool_result':
      return typeof observation.content === 'string'
        ? observation.content
        : JSON.stringify(observation.content);
    case 'tool_error':
      return `Error: ${observation.message}`;
    case 'denied':
      return `Denied: ${observation.reason}`;
    case 'invalid_decision':
      return `Invalid decision: ${observation.message}`;
  }
}

function truncate(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let keep = maxChars;
  const last = text.charCodeAt(keep - 1);
  // A high surrogate as the last kept unit would leave half a character behind.
  if (keep > 0 && last >= 0xd800 && last <= 0xdbff) keep--;
  return `${text.slice(0, keep)}\n[… truncated: ${text.length - keep} of ${text.length} characters cut]`;
}
