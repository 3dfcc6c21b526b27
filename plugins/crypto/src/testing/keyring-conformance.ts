import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isLoomError } from '../errors.js';
import type { Keyring } from '../keyring.js';
import { keyRefId } from '../keyring.js';

/** What a keyring implementation hands {@link keyringConformance} for one test. */
export interface KeyringHarness {
  /** A fresh, empty keyring. */
  keyring: Keyring;
  /** A second handle on the same keys (another connection or process), caching nothing. */
  openPeer(): Promise<Keyring>;
  /** Release everything (keyrings, peers, throwaway schemas or files). */
  close(): Promise<void>;
}

let counter = 0;
function freshSubject(): string {
  counter += 1;
  return `subject-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return isLoomError(error) ? error.code : `untyped: ${String(error)}`;
  }
  return 'resolved';
}

function hex(bytes: Uint8Array | undefined): string {
  return Buffer.from(bytes ?? new Uint8Array()).toString('hex');
}

/**
 * The one behaviour suite every {@link Keyring} passes (memory, SQLite, Postgres, a KMS-backed
 * one of your own). Call it from a `*.test.ts` with a factory for a fresh harness per test.
 *
 * @example
 * keyringConformance('memory', async () => { const keyring = new InMemoryKeyring(); … });
 */
export function keyringConformance(name: string, open: () => Promise<KeyringHarness>): void {
  describe(`Keyring conformance: ${name}`, () => {
    let harness: KeyringHarness;
    let keyring: Keyring;
    beforeEach(async () => {
      harness = await open();
      keyring = harness.keyring;
    });
    afterEach(async () => {
      await harness.close();
    });

    it('current creates version 1 once, 32 bytes, the same on every call', async () => {
      const subject = freshSubject();
      const first = await keyring.current(subject);
      expect(first).toMatchObject({ subject, version: 1 });
      expect(first.key.byteLength).toBe(32);
      expect(hex((await keyring.current(subject)).key)).toBe(hex(first.key));
    });

    it('subjects have distinct keys', async () => {
      const [a, b] = [freshSubject(), freshSubject()];
      expect(hex((await keyring.current(a)).key)).not.toBe(hex((await keyring.current(b)).key));
    });

    it('a second handle sees the same key, and racing first uses agree on one', async () => {
      const peer = await harness.openPeer();
      const subject = freshSubject();
      const [mine, theirs] = await Promise.all([keyring.current(subject), peer.current(subject)]);
      expect(hex(theirs.key)).toBe(hex(mine.key));
      expect(theirs.version).toBe(1);
    });

    it('lookup returns the keys of a batch and leaves unknown refs absent', async () => {
      const [a, b, unknown] = [freshSubject(), freshSubject(), freshSubject()];
      const keyA = await keyring.current(a);
      const keyB = await keyring.current(b);
      const peer = await harness.openPeer();
      const found = await peer.lookup([
        { subject: a, version: 1 },
        { subject: b, version: 1 },
        { subject: a, version: 2 },
        { subject: unknown, version: 1 },
      ]);
      expect([...found.keys.keys()].sort()).toEqual([keyRefId(a, 1), keyRefId(b, 1)].sort());
      expect(hex(found.keys.get(keyRefId(a, 1))?.key)).toBe(hex(keyA.key));
      expect(hex(found.keys.get(keyRefId(b, 1))?.key)).toBe(hex(keyB.key));
      expect([...found.forgotten]).toEqual([]);
    });

    it('rotate makes a new current version and keeps the old one readable', async () => {
      const subject = freshSubject();
      const v1 = await keyring.current(subject);
      expect(await keyring.rotate(subject)).toBe(2);
      const v2 = await keyring.current(subject);
      expect(v2.version).toBe(2);
      expect(hex(v2.key)).not.toBe(hex(v1.key));
      const found = await (await harness.openPeer()).lookup([
        { subject, version: 1 },
        { subject, version: 2 },
      ]);
      expect(hex(found.keys.get(keyRefId(subject, 1))?.key)).toBe(hex(v1.key));
      expect(hex(found.keys.get(keyRefId(subject, 2))?.key)).toBe(hex(v2.key));
    });

    it('forget destroys every version for good, everywhere, and only that subject', async () => {
      const [gone, kept] = [freshSubject(), freshSubject()];
      await keyring.current(gone);
      await keyring.rotate(gone);
      await keyring.current(kept);
      expect(await keyring.forget(gone)).toEqual({
        subject: gone,
        keysDestroyed: 2,
        alreadyForgotten: false,
      });
      for (const handle of [keyring, await harness.openPeer()]) {
        const found = await handle.lookup([
          { subject: gone, version: 1 },
          { subject: gone, version: 2 },
          { subject: kept, version: 1 },
        ]);
        expect([...found.keys.keys()]).toEqual([keyRefId(kept, 1)]);
        expect([...found.forgotten]).toEqual([gone]);
        expect(await codeOf(handle.current(gone))).toBe('SUBJECT_FORGOTTEN');
        expect(await codeOf(handle.rotate(gone))).toBe('SUBJECT_FORGOTTEN');
      }
    });

    it('forget is idempotent, and works for a subject that never had a key', async () => {
      const subject = freshSubject();
      expect(await keyring.forget(subject)).toEqual({
        subject,
        keysDestroyed: 0,
        alreadyForgotten: false,
      });
      expect(await keyring.forget(subject)).toEqual({
        subject,
        keysDestroyed: 0,
        alreadyForgotten: true,
      });
      expect(await codeOf(keyring.current(subject))).toBe('SUBJECT_FORGOTTEN');
    });

    it('a subject that is not a non-empty string is INVALID_ARGUMENT', async () => {
      for (const bad of ['', 'x'.repeat(257), 42 as unknown as string]) {
        expect(await codeOf(keyring.current(bad))).toBe('INVALID_ARGUMENT');
        expect(await codeOf(keyring.forget(bad))).toBe('INVALID_ARGUMENT');
      }
    });
  });
}
