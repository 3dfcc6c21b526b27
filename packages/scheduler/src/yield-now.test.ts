import { describe, expect, it } from 'vitest';
import { yieldNow } from './yield-now.js';

describe('yieldNow', () => {
  it('lets a macrotask queued before it run, which a resolved await does not', async () => {
    let ran = 0;
    setImmediate(() => ran++);
    await Promise.resolve();
    expect(ran).toBe(0);
    await yieldNow();
    expect(ran).toBe(1);
  });

  it('lets other scheduled work interleave with a long loop', async () => {
    const order: string[] = [];
    const loop = async () => {
      for (let i = 0; i < 3; i++) {
        order.push(`loop ${i}`);
        await yieldNow();
      }
    };
    const other = async () => {
      await new Promise((resolve) => setImmediate(resolve));
      order.push('other');
    };
    await Promise.all([loop(), other()]);
    expect(order.indexOf('other')).toBeLessThan(order.indexOf('loop 2'));
  });
});
