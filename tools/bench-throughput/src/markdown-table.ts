/** Column alignment: left for labels, right for numbers. */
export type Align = 'left' | 'right';

/**
 * A GitHub-flavoured Markdown table with padded columns (readable as plain text too). Cells are
 * escaped for `|`; a row shorter than the header is padded with empty cells, a longer one is an
 * error (a column would silently vanish).
 */
export function markdownTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  align: readonly Align[] = [],
): string {
  const width = header.length;
  const escaped = [header, ...rows].map((row, index) => {
    if (row.length > width) {
      throw new Error(`table row ${index} has ${row.length} cells but the header has ${width}`);
    }
    return Array.from({ length: width }, (_, column) => (row[column] ?? '').replace(/\|/g, '\\|'));
  });
  const widths = Array.from({ length: width }, (_, column) =>
    Math.max(3, ...escaped.map((row) => (row[column] as string).length)),
  );
  const line = (cells: string[]) =>
    `| ${cells
      .map((cell, column) => {
        const size = widths[column] as number;
        return align[column] === 'right' ? cell.padStart(size) : cell.padEnd(size);
      })
      .join(' | ')} |`;
  const rule = `| ${widths
    .map((size, column) =>
      align[column] === 'right' ? `${'-'.repeat(size - 1)}:` : '-'.repeat(size),
    )
    .join(' | ')} |`;
  const [head, ...body] = escaped as [string[], ...string[][]];
  return [line(head), rule, ...body.map(line)].join('\n');
}
