import { countTokens as exactO200k } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { isLoomError, RenderErrorCode } from './errors.js';
import { renderMessages } from './render-messages.js';
import { createTiktokenTokenizer, tiktokenRunLengthMax } from './tiktoken.js';

describe('createTiktokenTokenizer (real gpt-tokenizer)', () => {
  it('picks the model encoding and counts exactly', async () => {
    const gpt4o = await createTiktokenTokenizer({ model: 'gpt-4o' });
    expect(gpt4o.name).toBe('o200k_base');
    expect(gpt4o.count('hello world')).toBe(2);
    expect(gpt4o.count('Hello, world! How are you?')).toBe(8);
    expect(gpt4o.count('')).toBe(0);
    expect(gpt4o.messageOverheadTokens).toBe(3);
    const gpt4 = await createTiktokenTokenizer({ model: 'gpt-4' });
    expect(gpt4.name).toBe('cl100k_base');
    // The two encodings differ on this text: the right one was loaded.
    const sample = 'Übermäßige Größenänderungen 東京都 🚀🚀';
    expect(gpt4.count(sample)).not.toBe(gpt4o.count(sample));
    expect((await createTiktokenTokenizer({ encoding: 'cl100k_base' })).count(sample)).toBe(
      gpt4.count(sample),
    );
  });

  it('counts special-token text as text instead of throwing', async () => {
    const tokenizer = await createTiktokenTokenizer({ encoding: 'o200k_base' });
    expect(() => exactO200k('a <|endoftext|> b')).toThrow();
    expect(tokenizer.count('a <|endoftext|> b')).toBeGreaterThan(3);
  });

  it('counts hostile text: lone surrogates and control characters', async () => {
    const tokenizer = await createTiktokenTokenizer({ encoding: 'o200k_base' });
    const count = tokenizer.count('x\ud800y\u0000\u001b\udfff');
    expect(Number.isSafeInteger(count) && count > 0).toBe(true);
  });

  it('is exact on prose, and cuts only runs longer than tiktokenRunLengthMax', async () => {
    const tokenizer = await createTiktokenTokenizer({ encoding: 'o200k_base' });
    const prose = 'The quick brown fox jumps over the lazy dog; naïve café, 12345 items. '.repeat(
      800,
    );
    expect(tokenizer.count(prose)).toBe(exactO200k(prose));
    const atCap = 'q'.repeat(tiktokenRunLengthMax);
    expect(tokenizer.count(atCap)).toBe(exactO200k(atCap));
    // 200,000 letters with no space: one piece would take the encoder minutes (quadratic
    // merging); cut into 200 runs of 1,000, each counted exactly.
    const run = 'x'.repeat(200 * tiktokenRunLengthMax);
    expect(tokenizer.count(run)).toBe(200 * exactO200k('x'.repeat(tiktokenRunLengthMax)));
    // A cut never splits a surrogate pair: emoji runs count as whole emoji.
    const emoji = '😀'.repeat(tiktokenRunLengthMax);
    expect(tokenizer.count(emoji)).toBeGreaterThanOrEqual(tiktokenRunLengthMax / 2);
  });

  it('measures a render exactly: the text plus 3 tokens a message', async () => {
    const tokenizer = await createTiktokenTokenizer({ model: 'gpt-4o-mini' });
    const result = renderMessages(
      {
        kind: 'group',
        children: [
          { kind: 'system', text: 'hello world' },
          { kind: 'user', text: 'Hello, world! How are you?' },
        ],
      },
      { tokenBudget: 100, tokenizer },
    );
    expect(result.tokens).toBe(2 + 3 + 8 + 3);
  });

  it('a model with no known encoding is TOKENIZER_UNAVAILABLE naming it', async () => {
    const error = await createTiktokenTokenizer({ model: 'claude-sonnet-4' }).catch(
      (e: unknown) => e,
    );
    expect(isLoomError(error, RenderErrorCode.TOKENIZER_UNAVAILABLE)).toBe(true);
    expect(error).toMatchObject({ fields: { model: 'claude-sonnet-4' } });
    const bad = await createTiktokenTokenizer({ encoding: 'p50k_base' as never }).catch(
      (e: unknown) => e,
    );
    expect(bad).toMatchObject({ code: 'INVALID_ARGUMENT', fields: { option: 'encoding' } });
  });
});
