import { describe, expect, it } from 'vitest';
import { CursorTracker, parseCursor } from '../stream-cursor.js';
import { TurnText, textHash } from './turn-text.js';

describe('TurnText', () => {
  it('shows each code unit of an attempt once, in order, whichever source repeats it', () => {
    const text = new TurnText(1);
    expect(text.take('a', 0, 'Hel')).toEqual([
      { kind: 'text', attempt: 'a', offset: 0, text: 'Hel' },
    ]);
    // The store's coalesced chunk overlaps what this process already showed.
    expect(text.take('a', 0, 'Hello')).toEqual([
      { kind: 'text', attempt: 'a', offset: 3, text: 'lo' },
    ]);
    expect(text.take('a', 3, 'lo')).toEqual([]);
    // A gap (a write that failed): nothing until the record.
    expect(text.take('a', 9, 'xyz')).toEqual([]);
    expect(text.finish('Hello world')).toEqual([
      { kind: 'text', attempt: 'a', offset: 5, text: ' world' },
    ]);
  });

  it('retracts an attempt when another one writes, and never shows it again', () => {
    const text = new TurnText(2);
    text.take('a', 0, 'Draft');
    expect(text.take('b', 0, 'Fin')).toEqual([
      { kind: 'retract', attempt: 'a', length: 5 },
      { kind: 'text', attempt: 'b', offset: 0, text: 'Fin' },
    ]);
    expect(text.take('a', 5, ' more')).toEqual([]);
    expect(text.isRetired('a')).toBe(true);
  });

  it('completes from the record, retracting first when what was shown is not its start', () => {
    const shown = new TurnText(1);
    shown.take('a', 0, 'Hello');
    expect(shown.finish('Goodbye')).toEqual([
      { kind: 'retract', attempt: 'a', length: 5 },
      { kind: 'text', attempt: 'recorded', offset: 0, text: 'Goodbye' },
    ]);
    expect(new TurnText(1).finish('')).toEqual([]);
  });

  it('resumes at a position: by length and hash, without the text', () => {
    const text = new TurnText(3, { turn: 3, attempt: 'a', length: 5, hash: textHash('Hello') });
    expect(text.take('a', 0, 'Hello, wo')).toEqual([
      { kind: 'text', attempt: 'a', offset: 5, text: ', wo' },
    ]);
    const other = new TurnText(3, { turn: 3, attempt: 'a', length: 5, hash: textHash('Jello') });
    expect(other.finish('Hello')).toEqual([
      { kind: 'retract', attempt: 'a', length: 5 },
      { kind: 'text', attempt: 'recorded', offset: 0, text: 'Hello' },
    ]);
  });
});

describe('stream cursors', () => {
  it('track the last sequence and the text shown, and parse back', () => {
    const tracker = new CursorTracker();
    expect(tracker.toString()).toBe('-1');
    const base = { runId: 'r', replayed: false } as const;
    tracker.take({ ...base, type: 'turn_started', turn: 2, sequence: 7 });
    tracker.take({ ...base, type: 'text_delta', turn: 2, attempt: 'x1', offset: 0, text: 'Hi ' });
    tracker.take({ ...base, type: 'text_delta', turn: 2, attempt: 'x1', offset: 3, text: 'there' });
    const cursor = tracker.toString();
    expect(parseCursor(cursor)).toEqual({
      sequence: 7,
      text: { turn: 2, attempt: 'x1', length: 8, hash: textHash('Hi there') },
    });
    tracker.take({ ...base, type: 'text_retracted', turn: 2, attempt: 'x1', length: 8 });
    expect(tracker.toString()).toBe('7');
    for (const bad of ['', 'x', '1.2', '1.2.a.3', '1.2.a b.3.4', `${'9'.repeat(16)}`]) {
      expect(() => parseCursor(bad)).toThrow(/not a stream cursor/);
    }
  });
});
