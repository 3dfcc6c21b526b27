// deadLinks, on its own: the check the release test runs on each packed README.
import { describe, expect, it } from 'vitest';
import { deadLinks } from './packed-links.test-support.js';

const packed = ['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/sqlite/index.js'];

describe('deadLinks', () => {
  it('reports a link leaving the package and one to a file the tarball lacks, with their lines', () => {
    const readme = [
      '# pkg',
      'See [the guide](../../docs/agents.md#run-it) and',
      '[`examples/a.ts`](examples/a.ts), ![diagram](../../docs/diagram.svg).',
      '[guide]: ../../docs/flows.md',
      '<a href="../other">other</a>',
    ].join('\n');
    expect(deadLinks(readme, packed)).toEqual([
      { target: '../../docs/agents.md#run-it', line: 2, reason: 'leaves the package' },
      { target: 'examples/a.ts', line: 3, reason: 'not packed' },
      { target: '../../docs/diagram.svg', line: 3, reason: 'leaves the package' },
      { target: '../../docs/flows.md', line: 4, reason: 'leaves the package' },
      { target: '../other', line: 5, reason: 'leaves the package' },
    ]);
  });

  it('accepts packed files and folders, anchors and absolute URLs, and skips code', () => {
    const readme = [
      '[license](LICENSE), [entry](./dist/index.js), [dist](dist/sqlite/), [up](#usage)',
      '[spec](https://example.com/spec.md), [mail](mailto:a@b.c)',
      '`[not a link](../../docs/x.md)` in a code span',
      '```md',
      '[in a fence](../../docs/y.md)',
      '```',
    ].join('\n');
    expect(deadLinks(readme, packed)).toEqual([]);
  });
});
