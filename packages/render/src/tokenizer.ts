/**
 * Counts tokens the way a model family does. `count` must be pure and return a whole number
 * ≥ 0; `messageOverheadTokens` is what the provider adds around each message (role markers).
 */
export interface Tokenizer {
  /** For reports and errors: `approximate`, `o200k_base`, … */
  readonly name: string;
  /** Tokens in `text`. Called once per text a render measures. */
  count(text: string): number;
  /** Tokens each message costs besides its text. */
  readonly messageOverheadTokens: number;
}

/**
 * The fast default: `ceil(length / 4)` tokens per text (UTF-16 code units: about four
 * characters of English a token for OpenAI's and Anthropic's tokenizers), plus 3 tokens a
 * message (OpenAI's chat format: a start marker, the role, an end marker). O(1) per text. It
 * overestimates code and JSON less than it underestimates CJK text (about one token a
 * character): leave headroom in the budget, or use the exact tokenizer from
 * `@loom/render/tiktoken` for OpenAI models.
 */
export const approximateTokenizer: Tokenizer = {
  name: 'approximate',
  count: (text: string): number => Math.ceil(text.length / 4),
  messageOverheadTokens: 3,
};
