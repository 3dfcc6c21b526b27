import { describe, expect, it } from 'vitest';
import {
  decodeNotify,
  encodeNotifies,
  notifyPayloadBytesMax,
  PostCommitNotifier,
} from './post-commit-notifier.js';

interface Flush {
  channels: string[];
  payloads: string[];
  done: () => void;
  fail: (error: Error) => void;
}

/** A notifier whose sends wait until the test settles them, so folding can be counted. */
function heldNotifier() {
  const flushes: Flush[] = [];
  const notifier = new PostCommitNotifier(
    (channels, payloads) =>
      new Promise<void>((resolve, reject) => {
        flushes.push({ channels, payloads, done: resolve, fail: reject });
      }),
  );
  return { notifier, flushes };
}

async function turn(): Promise<void> {
  for (let index = 0; index < 5; index++) await Promise.resolve();
}

describe('PostCommitNotifier (ADR 0028)', () => {
  it('folds the reports of one turn into one statement, one payload per channel', async () => {
    const { notifier, flushes } = heldNotifier();
    notifier.committed('s_1', 'a');
    notifier.committed('s_2', 'b');
    notifier.committed('s_1', 'c');
    notifier.committed('s_1', 'a');
    await turn();
    expect(flushes).toHaveLength(1);
    expect(flushes[0]?.channels).toEqual(['s_1', 's_2']);
    expect(flushes[0]?.payloads.map(decodeNotify)).toEqual([['a', 'c'], ['b']]);
    flushes[0]?.done();
    await notifier.close();
    expect(notifier.statements).toBe(1);
  });

  it('keeps one statement in flight and folds what is reported meanwhile into the next', async () => {
    const { notifier, flushes } = heldNotifier();
    notifier.committed('s_0', 'first');
    await turn();
    for (let index = 0; index < 10; index++) notifier.committed('s_0', `during-${index}`);
    await turn();
    expect(flushes).toHaveLength(1);
    flushes[0]?.done();
    await turn();
    expect(flushes).toHaveLength(2);
    expect(decodeNotify(flushes[1]?.payloads[0] as string)).toHaveLength(10);
    flushes[1]?.done();
    await notifier.close();
    expect(notifier.statements).toBe(2);
  });

  it('counts a failed statement instead of throwing, and goes on with the next', async () => {
    const { notifier, flushes } = heldNotifier();
    notifier.committed('s_0', 'lost');
    await turn();
    notifier.committed('s_0', 'next');
    flushes[0]?.fail(new Error('connection lost'));
    await turn();
    expect(flushes).toHaveLength(2);
    flushes[1]?.done();
    await notifier.close();
    expect(notifier.failures).toBe(1);
    expect(notifier.statements).toBe(2);
  });

  it('sends what is pending on close, then ignores reports', async () => {
    const sent: string[][] = [];
    const notifier = new PostCommitNotifier(async (_channels, payloads) => {
      sent.push(payloads.flatMap(decodeNotify));
    });
    notifier.committed('s_0', 'pending');
    await notifier.close();
    notifier.committed('s_0', 'after-close');
    await turn();
    expect(sent).toEqual([['pending']]);
  });

  it('splits a channel’s ids into payloads under the byte limit, any id round-tripping', () => {
    const ids = Array.from({ length: 120 }, (_, index) => `é"\n:${index}-${'x'.repeat(150)}`);
    const { channels, payloads } = encodeNotifies(new Map([['s_3', new Set(ids)]]));
    expect(payloads.length).toBeGreaterThan(1);
    expect(new Set(channels)).toEqual(new Set(['s_3']));
    for (const payload of payloads) {
      expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(notifyPayloadBytesMax);
    }
    expect(payloads.flatMap(decodeNotify)).toEqual(ids);
  });

  it('decodes the older `<tip sequence>:<executionId>` payload, and nothing from a foreign one', () => {
    expect(decodeNotify('41:order:7')).toEqual(['order:7']);
    expect(decodeNotify('hello')).toEqual([]);
    expect(decodeNotify('{"a":1}')).toEqual([]);
    expect(decodeNotify('[1,"b"]')).toEqual(['b']);
  });
});
