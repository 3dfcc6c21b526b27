import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventHash } from './hash-chain.js';
import type { StoredRow } from './stored-row.js';
import { verifyRows } from './verify-rows.js';

/** ADR 0001's formula, spelled out with the one-string `createHash` it was defined with. */
function reference(
  prevHash: string | null,
  executionId: string,
  sequence: number,
  type: string,
  at: number,
  payloadText: string,
): string {
  return createHash('sha256')
    .update(`${prevHash ?? ''}\n${executionId}\n${sequence}\n${type}\n${at}\n${payloadText}`)
    .digest('hex');
}

// Logs written by the code before ADR 0054 (main at fa086c1, `InMemoryEventStore`), stored rows
// with their hashes: small events, Unicode and a lone surrogate, and payloads around the sizes
// where the hashing changes path (1 KiB cached views, the 16 KiB scratch buffer).
const goldenPath = join(import.meta.dirname, '__golden__', 'hash-chain-v1.golden.jsonl');
const golden: StoredRow[] = readFileSync(goldenPath, 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as StoredRow);
const goldenIds = [...new Set(golden.map((row) => row.executionId))];
const rowsOf = (id: string): StoredRow[] =>
  golden.filter((row) => row.executionId === id).map((row) => ({ ...row }));

/** A chained log of `count` events built with `eventHash`. */
function chained(executionId: string, payloads: readonly string[]): StoredRow[] {
  const rows: StoredRow[] = [];
  let prevHash: string | null = null;
  payloads.forEach((payloadText, sequence) => {
    const at = 1_700_000_000_000 + sequence;
    const hash = eventHash(prevHash, executionId, sequence, 'fixture', at, payloadText);
    rows.push({
      executionId,
      sequence,
      type: 'fixture',
      at,
      payloadText,
      position: 0,
      prevHash,
      hash,
    });
    prevHash = hash;
  });
  return rows;
}

describe('eventHash', () => {
  it('is ADR 0001’s formula for any text, sequence and time', () => {
    const text = fc.string({ unit: 'binary', maxLength: 40 });
    fc.assert(
      fc.property(
        fc.option(fc.stringMatching(/^[0-9a-f]{64}$/)),
        text,
        fc.oneof(fc.nat(), fc.maxSafeNat()),
        text,
        fc.oneof(fc.nat(), fc.maxSafeNat(), fc.integer({ min: 1_600_000_000_000, max: 2 ** 43 })),
        fc.string({ unit: 'binary', maxLength: 3000 }),
        (prevHash, executionId, sequence, type, at, payloadText) => {
          expect(eventHash(prevHash, executionId, sequence, type, at, payloadText)).toBe(
            reference(prevHash, executionId, sequence, type, at, payloadText),
          );
        },
      ),
      { numRuns: 500 },
    );
  });

  it('spells odd numbers from a tampered row as the formula does', () => {
    for (const value of [-1, 0.5, -0, 2 ** 53, 1e21, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(eventHash('p', 'e', value, 't', value, '{}')).toBe(
        reference('p', 'e', value, 't', value, '{}'),
      );
    }
  });

  it('lone surrogates and NUL in any field hash as the one string does', () => {
    for (const text of ['x\uD800', '\uDC00y', 'ab\uDC00\uD800', '\u0000', 'é 🧵']) {
      expect(eventHash(text, text, 1, text, 2, text)).toBe(reference(text, text, 1, text, 2, text));
    }
  });

  it('the same length with other bytes gives another digest (a reused view sees new bytes)', () => {
    const first = eventHash(null, 'e', 0, 't', 1, '{"n":1}');
    const second = eventHash(null, 'e', 0, 't', 1, '{"n":2}');
    expect(second).not.toBe(first);
    expect(second).toBe(reference(null, 'e', 0, 't', 1, '{"n":2}'));
    expect(eventHash(null, 'e', 0, 't', 1, '{"n":1}')).toBe(first);
  });

  it('payloads on both sides of the cached-view and scratch-buffer sizes', () => {
    for (const units of [0, 900, 1024, 1100, 5400, 5500, 16 * 1024, 200_000]) {
      for (const unit of ['x', 'é', '🧵']) {
        const payloadText = unit.repeat(Math.ceil(units / unit.length));
        expect(eventHash('a'.repeat(64), 'exec-1', 7, 'big', 9, payloadText)).toBe(
          reference('a'.repeat(64), 'exec-1', 7, 'big', 9, payloadText),
        );
      }
    }
  });
});

describe('verifyRows over a log written before ADR 0054', () => {
  it('every golden log verifies, with the hashes the old code stored', () => {
    expect(goldenIds).toHaveLength(3);
    for (const id of goldenIds) {
      const rows = rowsOf(id);
      expect(verifyRows(id, rows)).toEqual({
        ok: true,
        executionId: id,
        events: rows.length,
        lastHash: rows.at(-1)?.hash,
      });
    }
  });

  it('chaining the golden events again gives the golden hashes', () => {
    for (const id of goldenIds) {
      let prevHash: string | null = null;
      for (const row of rowsOf(id)) {
        const hash = eventHash(prevHash, id, row.sequence, row.type, row.at, row.payloadText);
        expect(hash, `${id}:${row.sequence}`).toBe(row.hash);
        prevHash = hash;
      }
    }
  });
});

describe('verifyRows finds tampering', () => {
  const cases: Array<[name: string, rows: () => StoredRow[]]> = [
    ['a golden log', () => rowsOf('golden-small')],
    ['a log chained now', () => chained('now', ['{"a":1}', '"é"', 'null', '[1,2]', '{"z":-0}'])],
  ];

  for (const [name, rowsFor] of cases) {
    describe(name, () => {
      it('one payload byte edited: broken at that event, the hash does not match', () => {
        const rows = rowsFor();
        const target = rows[2] as StoredRow;
        const last = target.payloadText.at(-1) === '}' ? ' }' : ' ';
        target.payloadText = target.payloadText.slice(0, -1) + last;
        const result = verifyRows(rows[0]?.executionId as string, rows);
        expect(result).toMatchObject({ ok: false, brokenAtSequence: 2 });
        expect(result.ok === false && result.reason).toContain('does not match');
      });

      it('one event dropped from the middle: broken where the gap is', () => {
        const rows = rowsFor();
        rows.splice(1, 1);
        expect(verifyRows(rows[0]?.executionId as string, rows)).toMatchObject({
          ok: false,
          brokenAtSequence: 2,
          reason: 'expected sequence 1, found 2',
        });
      });

      it('a dropped event renumbered: the next link does not point at its predecessor', () => {
        const rows = rowsFor();
        rows.splice(1, 1);
        rows.forEach((row, sequence) => {
          row.sequence = sequence;
        });
        expect(verifyRows(rows[0]?.executionId as string, rows)).toMatchObject({
          ok: false,
          brokenAtSequence: 1,
        });
      });

      it('two events swapped, sequences kept in place: broken at the first', () => {
        const rows = rowsFor();
        const [one, two] = [rows[1] as StoredRow, rows[2] as StoredRow];
        rows[1] = { ...two, sequence: 1 };
        rows[2] = { ...one, sequence: 2 };
        expect(verifyRows(rows[0]?.executionId as string, rows)).toMatchObject({
          ok: false,
          brokenAtSequence: 1,
        });
      });

      it('a fork (an event re-chained from an earlier one): the link is broken', () => {
        const rows = rowsFor();
        const id = rows[0]?.executionId as string;
        const forked = rows[2] as StoredRow;
        forked.prevHash = rows[0]?.hash ?? null;
        forked.hash = eventHash(forked.prevHash, id, 2, forked.type, forked.at, forked.payloadText);
        expect(verifyRows(id, rows)).toMatchObject({ ok: false, brokenAtSequence: 2 });
      });

      it('a truncated tail verifies on its own; only its last hash tells (a receipt keeps it)', () => {
        const rows = rowsFor();
        const whole = verifyRows(rows[0]?.executionId as string, rows);
        const cut = verifyRows(rows[0]?.executionId as string, rows.slice(0, -1));
        expect(cut.ok).toBe(true);
        expect(whole.ok && cut.ok && cut.lastHash !== whole.lastHash).toBe(true);
      });
    });
  }
});
