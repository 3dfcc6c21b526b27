import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { after, before, emailErased, receipt, stored, verified } from './erasure.js';

describe('the README example', () => {
  it('is the code of examples/erasure.ts, word for word', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const example = readFileSync(new URL('./erasure.ts', import.meta.url), 'utf8');
    const block = /## Example\n[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBe(example);
  });

  it('reads plaintext, stores ciphertext, and reads Erased after forget with the chain intact', () => {
    expect(before).toEqual({
      customerId: 'cus_8812',
      email: 'ada@example.com',
      cards: [{ number: '4111 1111 1111 1111', brand: 'visa' }],
    });
    expect(JSON.stringify(stored)).not.toContain('ada@example.com');
    expect(stored).toMatchObject({ email: { $enc: 'aes-256-gcm', kid: 'cus_8812', kv: 1 } });
    expect(receipt).toMatchObject({ subject: 'cus_8812', keysDestroyed: 1 });
    expect(emailErased).toBe(true);
    expect(after.cards[0]).toEqual({
      number: { $erased: true, subject: 'cus_8812', keyVersion: 1 },
      brand: 'visa',
    });
    expect(verified.ok).toBe(true);
  });
});
