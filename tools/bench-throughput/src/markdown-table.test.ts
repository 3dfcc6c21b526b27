import { describe, expect, it } from 'vitest';
import { markdownTable } from './markdown-table.js';

describe('markdownTable', () => {
  it('pads columns and right-aligns numbers', () => {
    expect(
      markdownTable(
        ['c', 'events/s'],
        [
          ['1', '3,600'],
          ['128', '14,000'],
        ],
        ['left', 'right'],
      ),
    ).toBe(
      ['| c   | events/s |', '| --- | -------: |', '| 1   |    3,600 |', '| 128 |   14,000 |'].join(
        '\n',
      ),
    );
  });

  it('escapes pipes inside cells', () => {
    expect(markdownTable(['a'], [['x | y']])).toContain('x \\| y');
  });

  it('pads a short row with empty cells and refuses a long one', () => {
    expect(markdownTable(['a', 'b'], [['1']]).split('\n')[2]).toBe('| 1   |     |');
    expect(() => markdownTable(['a'], [['1', '2']])).toThrow(/2 cells but the header has 1/);
  });
});
