import { LoomError, RenderErrorCode } from './errors.js';
import type { Tokenizer } from './tokenizer.js';

/** The tiktoken encodings of OpenAI's chat models. */
export type TiktokenEncoding = 'o200k_base' | 'cl100k_base';

/** Options of {@link createTiktokenTokenizer}: a model name, or the encoding itself. */
export type TiktokenOptions = { model: string } | { encoding: TiktokenEncoding };

/**
 * Longest run of non-space (or of space) characters handed to the encoder in one piece. BPE
 * merging inside one pre-token is quadratic: 100,000 letters with no space take seconds.
 * Text with no such run is counted exactly; a longer run is cut at this length, which can
 * differ from the exact count by about a token a cut.
 */
export const tiktokenRunLengthMax = 1_000;

interface Encoder {
  countTokens(text: string, options?: { disallowedSpecial?: Set<string> }): number;
}

/**
 * An exact tokenizer for OpenAI models, through the optional peer `gpt-tokenizer` (pure
 * JavaScript; install it yourself). Loads the one encoding the model uses (`cl100k_base` for
 * GPT-4 and GPT-3.5, as gpt-tokenizer's model table says; `o200k_base` for GPT-4o, GPT-4.1,
 * GPT-5, the o-series and any newer `gpt-`/`o<digit>` name), once per call of this function:
 * keep the tokenizer. Special-token text such as `<|endoftext|>` in a
 * prompt is counted as ordinary text (a prompt never sends special tokens). Each message
 * costs 3 tokens besides its text (OpenAI's chat format).
 *
 * Throws `TOKENIZER_UNAVAILABLE` when `gpt-tokenizer` is not installed or the model has no
 * known encoding (pass `{ encoding }` then).
 *
 * @example
 * import { createTiktokenTokenizer } from '@loom/render/tiktoken';
 * const tokenizer = await createTiktokenTokenizer({ model: 'gpt-4o' });
 * renderMessages(blueprint, { tokenBudget: 128_000, tokenizer });
 */
export async function createTiktokenTokenizer(options: TiktokenOptions): Promise<Tokenizer> {
  const encoding = 'encoding' in options ? options.encoding : await encodingOf(options.model);
  const encoder = await loadEncoder(encoding);
  const noSpecial = new Set<string>();
  // By default '<|endoftext|>' in the text throws: count it as the text it is instead.
  const encodeOptions = { disallowedSpecial: noSpecial };
  const countPiece = (text: string): number => encoder.countTokens(text, encodeOptions);
  return {
    name: encoding,
    messageOverheadTokens: 3,
    count: (text: string): number => {
      if (!hasLongRun(text)) return countPiece(text);
      let tokens = 0;
      for (const piece of cutLongRuns(text)) tokens += countPiece(piece);
      return tokens;
    },
  };
}

const openAIModel = /^(gpt-|chatgpt-|o\d)/;

async function encodingOf(model: string): Promise<TiktokenEncoding> {
  let map: Record<string, string>;
  try {
    ({ modelToEncodingMap: map } = (await import('gpt-tokenizer/mapping')) as {
      modelToEncodingMap: Record<string, string>;
    });
  } catch (error) {
    throw unavailable(error, { model });
  }
  // gpt-tokenizer lists the older models; every newer OpenAI chat model uses o200k_base (its
  // own default). A name that is not OpenAI's is refused rather than counted with a guess.
  const listed = Object.hasOwn(map, model) ? map[model] : undefined;
  const encoding = listed ?? (openAIModel.test(model) ? 'o200k_base' : undefined);
  if (encoding !== 'o200k_base' && encoding !== 'cl100k_base') {
    throw new LoomError(
      RenderErrorCode.TOKENIZER_UNAVAILABLE,
      `no OpenAI chat encoding is known for model ${JSON.stringify(model)}: pass { encoding: 'o200k_base' } (GPT-4o and later) or 'cl100k_base' (GPT-4, GPT-3.5), or use approximateTokenizer for other vendors`,
      { model },
    );
  }
  return encoding;
}

async function loadEncoder(encoding: TiktokenEncoding): Promise<Encoder> {
  if (encoding !== 'o200k_base' && encoding !== 'cl100k_base') {
    throw new LoomError(
      RenderErrorCode.INVALID_ARGUMENT,
      `unknown encoding ${JSON.stringify(encoding)}: use 'o200k_base' or 'cl100k_base'`,
      { option: 'encoding' },
    );
  }
  try {
    // Literal specifiers, so bundlers see both and a user loads only the one asked for.
    return encoding === 'o200k_base'
      ? await import('gpt-tokenizer/encoding/o200k_base')
      : await import('gpt-tokenizer/encoding/cl100k_base');
  } catch (error) {
    throw unavailable(error, { encoding });
  }
}

function unavailable(error: unknown, fields: { model?: string; encoding?: string }): LoomError {
  return new LoomError(
    RenderErrorCode.TOKENIZER_UNAVAILABLE,
    'the exact tokenizer needs the optional peer gpt-tokenizer: install it (npm install gpt-tokenizer), or use approximateTokenizer',
    fields,
    error,
  );
}

const longRun = new RegExp(`\\S{${tiktokenRunLengthMax + 1}}|\\s{${tiktokenRunLengthMax + 1}}`);

function hasLongRun(text: string): boolean {
  return text.length > tiktokenRunLengthMax && longRun.test(text);
}

/** Splits `text` so that no piece holds a run longer than the cap, never inside a surrogate pair. */
function* cutLongRuns(text: string): Generator<string> {
  let start = 0;
  let runLength = 0;
  let runIsSpace = false;
  for (let i = 0; i < text.length; i++) {
    const isSpace = isWhitespace(text.charCodeAt(i));
    if (runLength > 0 && isSpace === runIsSpace) runLength++;
    else {
      runIsSpace = isSpace;
      runLength = 1;
    }
    const code = text.charCodeAt(i);
    if (runLength >= tiktokenRunLengthMax && !(code >= 0xd800 && code <= 0xdbff)) {
      yield text.slice(start, i + 1);
      start = i + 1;
      runLength = 0;
    }
  }
  if (start < text.length) yield text.slice(start);
}

function isWhitespace(code: number): boolean {
  return (
    code === 0x20 ||
    (code >= 0x09 && code <= 0x0d) ||
    (code > 0x7f && /\s/.test(String.fromCharCode(code)))
  );
}
