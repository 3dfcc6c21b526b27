import { describe, expect, it, vi } from 'vitest';
import { isLoomError, RenderErrorCode } from './errors.js';

// As if the optional peer were not installed: importing it fails.
vi.mock('gpt-tokenizer/encoding/o200k_base', () => {
  throw new Error("Cannot find package 'gpt-tokenizer'");
});

describe('createTiktokenTokenizer without gpt-tokenizer', () => {
  it('is TOKENIZER_UNAVAILABLE telling the user to install it, not a crash', async () => {
    const { createTiktokenTokenizer } = await import('./tiktoken.js');
    const error = await createTiktokenTokenizer({ encoding: 'o200k_base' }).catch(
      (e: unknown) => e,
    );
    expect(isLoomError(error, RenderErrorCode.TOKENIZER_UNAVAILABLE)).toBe(true);
    expect((error as Error).message).toContain('npm install gpt-tokenizer');
    expect(error).toMatchObject({ fields: { encoding: 'o200k_base' } });
  });
});
