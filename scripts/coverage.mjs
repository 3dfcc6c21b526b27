// Line and branch coverage of each package's src/ (V8, through @vitest/coverage-v8), one package
// at a time, and a table of the results: `pnpm coverage [dir ...]` (default: every package,
// plugin and tool with tests). Each package counts only what its own tests run in-process: a
// child process's coverage and another package's tests (which import the built dist/) are not
// counted. Tests, benches and test-support files are left out of the denominator. The summaries
// land in coverage/<package>/coverage-summary.json, the table in coverage/summary.md.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const requested = process.argv.slice(2);
const dirs =
  requested.length > 0
    ? requested
    : ['packages', 'plugins', 'tools'].flatMap((group) =>
        readdirSync(join(root, group))
          .map((name) => join(group, name))
          .filter((dir) => existsSync(join(root, dir, 'src'))),
      );

const percent = (part) => (part.total === 0 ? '—' : `${part.pct.toFixed(2)} %`);
const rows = [];
let failed = 0;
for (const dir of dirs) {
  const name = dir.split('/').pop();
  const out = join(root, 'coverage', name);
  mkdirSync(out, { recursive: true });
  const args = [
    'vitest',
    'run',
    '--reporter=dot',
    '--coverage.enabled',
    '--coverage.provider=v8',
    '--coverage.include=src/**/*.ts',
    '--coverage.exclude=src/**/*.test.ts',
    '--coverage.exclude=src/**/*.bench.ts',
    '--coverage.exclude=src/**/*.test-support.ts',
    '--coverage.reporter=json-summary',
    `--coverage.reportsDirectory=${out}`,
  ];
  process.stdout.write(`coverage: ${dir} … `);
  const run = spawnSync('npx', args, { cwd: join(root, dir), stdio: ['ignore', 'pipe', 'pipe'] });
  const summaryPath = join(out, 'coverage-summary.json');
  if (run.status !== 0 || !existsSync(summaryPath)) {
    failed++;
    console.log(`failed (exit ${run.status}); its output:`);
    console.log(`${run.stdout}`.split('\n').slice(-30).join('\n'));
    console.log(`${run.stderr}`.split('\n').slice(-30).join('\n'));
    continue;
  }
  const { total } = JSON.parse(readFileSync(summaryPath, 'utf8'));
  rows.push({ dir, total });
  console.log(`lines ${percent(total.lines)}, branches ${percent(total.branches)}`);
}

const table = [
  '| package | lines | branches | functions |',
  '|---|---|---|---|',
  ...rows.map(
    ({ dir, total }) =>
      `| ${dir} | ${percent(total.lines)} (${total.lines.covered}/${total.lines.total}) | ` +
      `${percent(total.branches)} (${total.branches.covered}/${total.branches.total}) | ` +
      `${percent(total.functions)} |`,
  ),
].join('\n');
writeFileSync(join(root, 'coverage', 'summary.md'), `${table}\n`);
console.log(`\n${table}`);
if (failed > 0) {
  console.log(`coverage: ${failed} package(s) failed; their figures are missing above`);
  process.exit(1);
}
