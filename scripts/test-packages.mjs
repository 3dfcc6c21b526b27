// `pnpm test`: every workspace package's `test` script, two packages at a time, the longest
// first. Turbo (which builds and benches) starts ready tasks in its own graph order, which put the
// two longest suites (event-runtime's and dst's) last and left one core idle for the final
// minute; no turbo option orders tasks, so this script does: a package starts when a slot frees,
// in order of its expected test time (the seconds below, measured in clean-clone runs; a package
// not listed weighs its number of test files). Every package runs even when one fails, and the
// exit code is 1 if any did. Output lines are prefixed `<package>:test: ` as turbo's were. The
// last lines name each failed test and its message's start, since a CI log keeps only its tail.
//
//   node scripts/test-packages.mjs [--dry]     LOOM_TEST_CONCURRENCY (default 2)
//
// `--dry` prints the plan as JSON (the order, the concurrency, the LOOM_* settings the packages
// will see) and runs nothing.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');

/** Seconds of each package's tests in the clean-clone `.ci/run`s of 2026-12-07 (medians). */
const expectedSeconds = {
  '@loom/event-runtime': 200,
  '@loom/agent-loop': 125,
  '@loom/view': 105,
  '@loom/workflow-runtime': 100,
  '@loom/dst': 85,
  '@loom/plugin-crypto': 60,
  '@loom/plugin-content': 32,
  '@loom/bench-throughput': 25,
  '@loom/release-check': 17,
  '@loom/reasoning': 11,
  '@loom/middleware': 6,
  '@loom/render': 6,
  '@loom/scheduler': 3,
};

function testFiles(dir) {
  let count = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    if (entry.isDirectory()) count += testFiles(join(dir, entry.name));
    else if (/\.test\.(ts|mts|js|mjs)$/.test(entry.name)) count += 1;
  }
  return count;
}

function packagesWithTests() {
  const found = [];
  for (const group of ['packages', 'plugins', 'tools']) {
    const groupDir = join(root, group);
    if (!existsSync(groupDir)) continue;
    for (const name of readdirSync(groupDir).sort()) {
      const dir = join(groupDir, name);
      const manifestPath = join(dir, 'package.json');
      if (!existsSync(manifestPath)) continue;
      const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
      if (manifest.scripts?.test === undefined) continue;
      const weight = expectedSeconds[manifest.name] ?? testFiles(dir);
      found.push({ name: manifest.name, dir, weight });
    }
  }
  return found.sort((a, b) => b.weight - a.weight || a.name.localeCompare(b.name));
}

const concurrency = Number(process.env.LOOM_TEST_CONCURRENCY ?? 2);
if (!Number.isInteger(concurrency) || concurrency < 1) {
  console.error(
    `LOOM_TEST_CONCURRENCY must be a positive integer, not ${process.env.LOOM_TEST_CONCURRENCY}`,
  );
  process.exit(2);
}
const queue = packagesWithTests();

if (process.argv.some((arg) => arg === '--dry' || arg.startsWith('--dry='))) {
  const settings = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => key.startsWith('LOOM_')),
  );
  const order = queue.map((pkg) => ({ name: pkg.name, dir: relative(root, pkg.dir) }));
  console.log(JSON.stringify({ concurrency, order, settings }, null, 2));
  process.exit(0);
}

/** Runs one package's `test` script, each output line prefixed with its name. */
function run(pkg) {
  const startedMs = Date.now();
  const prefix = `${pkg.name}:test: `;
  const child = spawn('pnpm', ['run', 'test'], {
    cwd: pkg.dir,
    env: process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const [stream, out] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ]) {
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      if (lines.length > 0) out.write(lines.map((line) => prefix + line).join('\n') + '\n');
    });
    stream.on('end', () => {
      if (rest !== '') out.write(`${prefix}${rest}\n`);
    });
  }
  return new Promise((resolve) => {
    child.on('error', (error) => {
      console.error(`${prefix}could not start: ${error.message}`);
      resolve({ pkg, name: pkg.name, code: 1, seconds: 0, startedMs });
    });
    child.on('close', (code, signal) =>
      resolve({
        pkg,
        name: pkg.name,
        code: code ?? (signal === null ? 1 : 128),
        seconds: (Date.now() - startedMs) / 1000,
        startedMs,
      }),
    );
  });
}

const results = [];
async function lane() {
  for (let pkg = queue.shift(); pkg !== undefined; pkg = queue.shift()) {
    results.push(await run(pkg));
  }
}
await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, lane));

const failed = results.filter((result) => result.code !== 0);
console.log(
  `test-packages: ${results.length} packages, ${concurrency} at a time: ${results
    .map(
      (result) =>
        `${result.name} ${result.seconds.toFixed(1)} s${result.code === 0 ? '' : ` (exit ${result.code})`}`,
    )
    .join(', ')}`,
);
if (failed.length > 0) {
  console.log(`test-packages: failed: ${failed.map((result) => result.name).join(', ')}`);
  // A CI log keeps only its tail, and vitest names a failure where it happens, among the other
  // packages' lines. The failed tests are named again here, last, with their messages' first
  // lines, from each failed package's JSON report.
  for (const result of failed) {
    for (const line of failureLines(result.pkg, result.startedMs)) {
      console.log(line);
    }
  }
  process.exit(1);
}

/** The failed tests in the `.vitest-report.json` one package's run wrote, a few lines each. */
function failureLines(pkg, startedMs) {
  const prefix = `test-packages: ${pkg.name}`;
  const report = join(pkg.dir, '.vitest-report.json');
  if (!existsSync(report) || statSync(report).mtimeMs < startedMs) {
    return [`${prefix}: this run wrote no report (it ended before vitest wrote one)`];
  }
  let json;
  try {
    json = JSON.parse(readFileSync(report, 'utf8'));
  } catch (error) {
    return [`${prefix}: its report could not be read: ${error.message}`];
  }
  const lines = [];
  for (const file of json.testResults ?? []) {
    const path = relative(pkg.dir, file.name);
    const failedTests = (file.assertionResults ?? []).filter((test) => test.status === 'failed');
    if (failedTests.length === 0 && file.status === 'failed') {
      lines.push(`${prefix}: ${path} failed outside a test: ${firstLines(file.message)}`);
    }
    for (const test of failedTests) {
      lines.push(`${prefix}: FAILED ${path} > ${test.fullName}`);
      for (const message of (test.failureMessages ?? []).slice(0, 1)) {
        lines.push(`    ${firstLines(message)}`);
      }
    }
  }
  if (lines.length === 0)
    lines.push(`${prefix}: exited non-zero with no failed test in its report`);
  return lines;
}

/** The first lines of a failure message, at most 8 and 1,200 characters. */
function firstLines(message) {
  return String(message ?? '')
    .split('\n')
    .slice(0, 8)
    .join('\n    ')
    .slice(0, 1_200);
}
