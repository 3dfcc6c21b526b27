// Adds up the JSON reports every package's vitest run wrote and prints one closing line,
// so a reader (or CI) sees the whole suite's count, not the last package's.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

let passed = 0;
let failed = 0;
let skipped = 0;
const packages = [];
const missing = [];
for (const group of ['packages', 'plugins', 'tools']) {
  if (!existsSync(group)) continue;
  for (const name of readdirSync(group)) {
    const report = join(group, name, '.vitest-report.json');
    if (!existsSync(report)) {
      // A package with tests must write its report (vitest's json reporter), or its count would
      // silently drop out of the total.
      const manifest = join(group, name, 'package.json');
      if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).scripts?.test) {
        missing.push(`${group}/${name}`);
      }
      continue;
    }
    const json = JSON.parse(readFileSync(report, 'utf8'));
    passed += json.numPassedTests;
    failed += json.numFailedTests;
    skipped += json.numPendingTests + json.numTodoTests;
    packages.push(`${group}/${name}: ${json.numPassedTests}`);
  }
}
console.log(`test summary by package: ${packages.join(', ')}`);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
if (missing.length > 0) {
  console.log(`no test report from: ${missing.join(', ')} (add vitest's json reporter)`);
}
if (failed > 0 || passed === 0 || missing.length > 0) process.exit(1);
