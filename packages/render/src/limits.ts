/** Named limits of `@loom/render`: every input that could grow without bound has one. */
export const RenderLimits = {
  /**
   * Most nodes one blueprint may hold. A tree this large is already far past any context
   * window; the limit is what turns a blueprint that contains itself (a cycle) into an
   * `INVALID_BLUEPRINT` instead of an endless walk.
   */
  blueprintNodesMax: 1_000_000,
  /**
   * Longest text (in UTF-16 code units) that is measured: 4 MiB, about a million tokens, more
   * than any model's context. Past it the renderer throws `TEXT_TOO_LARGE` instead of spending
   * seconds in a tokenizer on text that could never be sent.
   */
  textLengthMax: 4 * 1024 * 1024,
  /** Default `maxChars` of `defaultObservation`: about 4,000 tokens of tool output. */
  observationCharsDefault: 16_000,
} as const;
