// Adds up the JSON reports every package's vitest run wrote and prints one closing line,
// so a reader (or CI) sees the whole suite's count, not the last package's. Before it: the
// slowest tests of the run with their package, and each package's count and test time (from
// the run's start to its last file's end, as vitest's json reporter records them), so a
// slowdown shows in the next run. Reads the reports under the current directory.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** How many of the run's slowest tests are listed. */
const slowestCount = 20;

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

let passed = 0;
let failed = 0;
let skipped = 0;
const packages = [];
const missing = [];
const tests = [];
for (const group of ['packages', 'plugins', 'tools']) {
  if (!existsSync(group)) continue;
  for (const name of readdirSync(group).sort()) {
    const where = `${group}/${name}`;
    const report = join(group, name, '.vitest-report.json');
    if (!existsSync(report)) {
      // A package with tests must write its report (vitest's json reporter), or its count would
      // silently drop out of the total.
      const manifest = join(group, name, 'package.json');
      if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).scripts?.test) {
        missing.push(where);
      }
      continue;
    }
    const json = JSON.parse(readFileSync(report, 'utf8'));
    passed += json.numPassedTests;
    failed += json.numFailedTests;
    skipped += json.numPendingTests + json.numTodoTests;
    let lastEndMs = json.startTime;
    for (const file of json.testResults ?? []) {
      lastEndMs = Math.max(lastEndMs, file.endTime ?? lastEndMs);
      const path = relative(join(process.cwd(), group, name), file.name);
      for (const test of file.assertionResults ?? []) {
        if (typeof test.duration !== 'number') continue;
        tests.push({ where, name: `${path} > ${test.fullName}`, durationMs: test.duration });
      }
    }
    packages.push(`${where}: ${json.numPassedTests} in ${seconds(lastEndMs - json.startTime)}`);
  }
}
tests.sort((a, b) => b.durationMs - a.durationMs);
if (tests.length > 0) {
  console.log(`slowest ${Math.min(slowestCount, tests.length)} tests:`);
  for (const test of tests.slice(0, slowestCount)) {
    console.log(`  ${seconds(test.durationMs).padStart(8)}  ${test.where}  ${test.name}`);
  }
}
console.log(`test summary by package (passed, test time): ${packages.join(', ')}`);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
if (missing.length > 0) {
  console.log(`no test report from: ${missing.join(', ')} (add vitest's json reporter)`);
}
if (failed > 0 || passed === 0 || missing.length > 0) process.exit(1);
