import { isLoomError, LoomError, type LoomErrorFields } from '@loom/event-runtime';

/**
 * Loom's one error class and its matcher, re-exported from `@loom/event-runtime` (the same
 * class, not a copy): this package's errors are `LoomError`s with the codes below.
 */
export { isLoomError, LoomError };

/**
 * Stable error codes of `@loom/render`. Callers match on `code`, never on `instanceof`
 * (two installed copies of the package break `instanceof`). A code is never reused; every
 * package's codes are listed in docs/errors.md.
 */
export const RenderErrorCode = {
  /**
   * The parts marked `required` (and the newest `keepLast` steps of a history) need more tokens
   * than the budget allows, even with every optional part dropped. `fields.requiredTokens` says
   * how many they need, `fields.budgetTokens` what was allowed.
   */
  TOKEN_BUDGET_TOO_SMALL: 'TOKEN_BUDGET_TOO_SMALL',
  /**
   * A blueprint node is malformed (unknown `kind`, text that is not a string, a `NaN` priority,
   * a node that is not an object) or the tree is too large (a cycle makes it endless);
   * `fields.nodePath` names the node as child indices from the root.
   */
  INVALID_BLUEPRINT: 'INVALID_BLUEPRINT',
  /**
   * A history step cannot be rendered without an orphan: a tool call with no observation, an
   * observation for a call the step did not make, or two observations for one call. Providers
   * reject all three. `fields.nodePath`, `fields.step` and `fields.callId` say where.
   */
  INVALID_HISTORY: 'INVALID_HISTORY',
  /**
   * One text to measure is longer than `RenderLimits.textLengthMax` code units; `fields.nodePath`,
   * `fields.length` and `fields.max` say which and by how much. Truncate it before rendering
   * (`defaultObservation` does for tool results).
   */
  TEXT_TOO_LARGE: 'TEXT_TOO_LARGE',
  /** An option is missing, of the wrong type or out of range; `fields.option` names it. */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /**
   * The exact tokenizer cannot be loaded: its optional peer `gpt-tokenizer` is not installed, or
   * the model has no known encoding (pass `encoding` instead). `fields.model` or
   * `fields.encoding` says which.
   */
  TOKENIZER_UNAVAILABLE: 'TOKENIZER_UNAVAILABLE',
} as const;

/** One of the stable error codes in {@link RenderErrorCode}. */
export type RenderErrorCode = (typeof RenderErrorCode)[keyof typeof RenderErrorCode];

/** Structured facts an error carries, so a caller never has to parse a message. */
export interface RenderErrorFields extends LoomErrorFields {
  requiredTokens?: number;
  budgetTokens?: number;
  /** The node at fault, as child indices from the blueprint's root. */
  nodePath?: readonly number[];
  /** The index of the history step at fault, within its history node. */
  step?: number;
  callId?: string;
  option?: string;
  length?: number;
  /** The name of the limit passed, in `RenderLimits`. */
  limit?: string;
  /** The limit's value. */
  max?: number;
  [key: string]: unknown;
}
