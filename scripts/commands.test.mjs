// The root commands do what the README says (issue 18): `pnpm bench` runs the vitest
// micro-benchmarks of every package and never the sustained sweeps of @loom/bench-throughput,
// `pnpm test` every package's tests (the longest suites first, the failed tests named last), no turbo run prints (or sends)
// telemetry, and LOOM_* overrides reach the tasks; `pnpm demo`
// (the README's first command) runs the agent demo and its contract holds, `pnpm demo:openai`
// without settings says how to set them, `pnpm demo:flow` still runs the flow demo. Run by `bash scripts/dev.sh test`:
// `node --test scripts/commands.test.mjs`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

const root = join(import.meta.dirname, '..');
// Turbo shows its telemetry notice (and turns telemetry on) once per user config directory, so
// every run gets a config directory turbo has never seen: a fresh machine.
const scratch = mkdtempSync(join(tmpdir(), 'loom-commands-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let runs = 0;

/**
 * Runs a root script with `--dry=json` appended (pnpm appends extra arguments to the script),
 * as on a machine where turbo never ran and nobody exported an opt-out: stdout and stderr
 * together (the notice goes to stderr), and the plan printed (turbo's, or for `test` the package
 * runner's).
 */
function dryRun(script, extraEnv = {}) {
  runs += 1;
  const env = { ...process.env, ...extraEnv, XDG_CONFIG_HOME: join(scratch, `config-${runs}`) };
  delete env.TURBO_TELEMETRY_DISABLED;
  delete env.DO_NOT_TRACK;
  const output = execFileSync('sh', ['-c', `pnpm --silent run ${script} --dry=json 2>&1`], {
    cwd: root,
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return {
    output,
    plan: JSON.parse(output.slice(output.indexOf('{'), output.lastIndexOf('}') + 1)),
  };
}

function packagesWithScript(name) {
  const found = [];
  for (const group of ['packages', 'plugins', 'tools']) {
    for (const dir of readdirSync(join(root, group))) {
      let manifest;
      try {
        manifest = JSON.parse(readFileSync(join(root, group, dir, 'package.json'), 'utf8'));
      } catch {
        continue; // a planned package: README only
      }
      if (manifest.scripts?.[name] !== undefined) found.push(manifest);
    }
  }
  return found;
}

test('root `pnpm bench` runs the vitest micro-benchmarks of every package, no sweep', () => {
  const { plan } = dryRun('bench');
  const ran = plan.tasks
    .filter((task) => task.command !== '<NONEXISTENT>')
    .map((task) => task.package)
    .sort();
  const micro = packagesWithScript('bench')
    .filter((manifest) => manifest.scripts.bench.startsWith('vitest bench'))
    .map((manifest) => manifest.name)
    .sort();
  assert.ok(micro.includes('@loom/event-runtime'), 'the kernel has vitest benchmarks');
  assert.deepEqual(ran, micro);
  assert.ok(!ran.includes('@loom/bench-throughput'));
});

test('turbo prints no telemetry notice', () => {
  const { output } = dryRun('bench');
  assert.doesNotMatch(output, /telemetry/i, "pnpm bench printed turbo's telemetry notice");
});

test('LOOM_* settings reach the tasks turbo runs (strict env mode filters the rest)', () => {
  // Without a pass-through, `LOOM_BENCH_…=… pnpm bench` ran the benchmarks on the defaults.
  const { plan } = dryRun('bench', { LOOM_TEST_PG_URL: 'postgres://elsewhere/test' });
  const passed = [
    ...(plan.globalCacheInputs.environmentVariables.passthrough ?? []),
    ...plan.tasks.flatMap((task) => task.environmentVariables.passthrough ?? []),
  ];
  assert.ok(
    passed.some((entry) => entry.startsWith('LOOM_TEST_PG_URL=')),
    `turbo does not pass LOOM_TEST_PG_URL to its tasks: ${JSON.stringify(passed)}`,
  );
});

test('root `pnpm test` runs every package with tests, the longest first, with LOOM_* settings', () => {
  const { plan, output } = dryRun('test', { LOOM_TEST_PG_URL: 'postgres://elsewhere/test' });
  assert.doesNotMatch(output, /telemetry/i);
  const names = plan.order.map((pkg) => pkg.name);
  assert.deepEqual(
    [...names].sort(),
    packagesWithScript('test')
      .map((manifest) => manifest.name)
      .sort(),
  );
  // The kernel's suite, the longest, starts first; the smallest last.
  assert.equal(names[0], '@loom/event-runtime');
  assert.equal(names.at(-1), '@loom/scheduler');
  assert.equal(plan.concurrency, 2);
  assert.equal(plan.settings.LOOM_TEST_PG_URL, 'postgres://elsewhere/test');
});

test('`pnpm changeset version` writes CHANGELOG.md entries (in a scratch copy)', () => {
  // Only what changesets reads: the manifests, the workspace list and .changeset/.
  const copy = join(scratch, 'changeset');
  const manifests = ['package.json', 'pnpm-workspace.yaml'];
  for (const group of ['packages', 'plugins', 'tools']) {
    for (const dir of readdirSync(join(root, group))) {
      if (existsSync(join(root, group, dir, 'package.json'))) {
        manifests.push(join(group, dir, 'package.json'));
      }
    }
  }
  for (const file of manifests) cpSync(join(root, file), join(copy, file));
  cpSync(join(root, '.changeset'), join(copy, '.changeset'), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
  writeFileSync(
    join(copy, '.changeset', 'scratch-entry.md'),
    "---\n'@loom/event-runtime': minor\n---\n\nA scratch entry for the kernel.\n",
  );
  execFileSync('pnpm', ['--silent', 'changeset', 'version'], {
    cwd: copy,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 120_000,
  });
  const read = (path) => readFileSync(join(copy, path), 'utf8');
  const kernel = read('packages/event-runtime/CHANGELOG.md');
  assert.match(kernel, /## 0\.2\.0/);
  assert.match(kernel, /A scratch entry for the kernel\./);
  assert.equal(JSON.parse(read('packages/event-runtime/package.json')).version, '0.2.0');
  // A package that depends on the kernel gets a patch release that says why.
  assert.match(read('packages/workflow-runtime/CHANGELOG.md'), /@loom\/event-runtime@0\.2\.0/);
  // The private benchmark tool is never versioned.
  assert.ok(!existsSync(join(copy, 'tools/bench-throughput/CHANGELOG.md')));
  assert.ok(!existsSync(join(copy, '.changeset', 'scratch-entry.md')), 'the entry was consumed');
});

/** Runs `node scripts/check-doc-blocks.mjs <files>`: exit code and output. */
function checkDocs(...files) {
  try {
    const output = execFileSync('node', [join(root, 'scripts', 'check-doc-blocks.mjs'), ...files], {
      cwd: root,
      encoding: 'utf8',
      timeout: 120_000,
    });
    return { code: 0, output };
  } catch (error) {
    if (error.status === null || error.status === undefined) throw error;
    return { code: error.status, output: `${error.stdout}${error.stderr}` };
  }
}

test('`pnpm check:docs` passes a good ts block and reports a broken one at its markdown line', () => {
  const good = join(scratch, 'good.md');
  writeFileSync(
    good,
    [
      '# Good', // 1
      '', // 2
      '```ts', // 3
      "import { InMemoryEventStore } from '@loom/event-runtime';", // 4
      'const store = new InMemoryEventStore();', // 5
      'console.log(store.backend);', // 6
      '```', // 7
      '', // 8
      '<!-- prelude:', // 9
      'declare function total(cents: number[]): number;', // 10
      '-->', // 11
      '```typescript', // 12
      'const sum: number = total([1, 2]);', // 13
      'console.log(sum);', // 14
      '```', // 15
      '', // 16
      '```sh', // 17
      'this is not TypeScript', // 18
      '```', // 19
      '', // 20
      '```ts nocheck: planned package', // 21
      "import { nothing } from '@loom/not-built-yet';", // 22
      '```', // 23
      '',
    ].join('\n'),
  );
  const passed = checkDocs(good);
  assert.equal(passed.code, 0, passed.output);
  assert.match(passed.output, /2 blocks checked, 1 opted out, in 1 files; 0 errors/);
  assert.match(passed.output, /good\.md:21: not checked \(nocheck\): planned package/);

  const broken = join(scratch, 'broken.md');
  writeFileSync(
    broken,
    [
      '# Broken', // 1
      '```ts', // 2
      "import { InMemoryEventStore } from '@loom/event-runtime';", // 3
      'const store = new InMemoryEventStore();', // 4
      'const size: string = store.backend.length;', // 5
      '```', // 6
      '', // 7
      '- in a list:', // 8
      '  ```ts', // 9
      '  const n: number = total([1]);', // 10
      '  ```', // 11
      '```ts nocheck', // 12
      'anything', // 13
      '```', // 14
      '',
    ].join('\n'),
  );
  const failed = checkDocs(good, broken);
  assert.equal(failed.code, 1, failed.output);
  const errors = failed.output.split('\n').filter((line) => line.includes('broken.md:'));
  assert.equal(errors.length, 3, failed.output);
  assert.match(errors[0], /broken\.md:5: TS2322: Type 'number' is not assignable to type 'string'/);
  assert.match(errors[1], /broken\.md:10: TS2304: Cannot find name 'total'/);
  assert.match(errors[2], /broken\.md:12: 'nocheck' needs a reason/);
  assert.match(failed.output, /4 blocks checked, 1 opted out, in 2 files; 3 errors/);
  assert.doesNotMatch(failed.output, /good\.md:\d+: TS/);
});

/** Runs a root script to its end (a deadline kills it): exit code and stdout + stderr. */
function runScript(script, extraEnv = {}) {
  const env = { ...process.env, ...extraEnv };
  for (const [name, value] of Object.entries(extraEnv)) if (value === undefined) delete env[name];
  try {
    const output = execFileSync('sh', ['-c', `pnpm --silent run ${script} 2>&1`], {
      cwd: root,
      env,
      encoding: 'utf8',
      timeout: 120_000,
    });
    return { code: 0, output };
  } catch (error) {
    if (error.status === null || error.status === undefined) throw error;
    return { code: error.status, output: `${error.stdout}` };
  }
}

const noOpenAi = {
  LOOM_OPENAI_BASE_URL: undefined,
  OPENAI_API_KEY: undefined,
  LOOM_OPENAI_MODEL: undefined,
};

test('`pnpm demo` runs the agent demo: killed while waiting for approval, refunded once, verified', () => {
  const { code, output } = runScript('demo', { LOOM_DEMO_DIR: join(scratch, 'demo'), ...noOpenAi });
  assert.equal(code, 0, output);
  assert.match(output, /💥 the driver sends SIGKILL to pid \d+ while the run waits for approval/);
  assert.match(output, /^result: goal_completed /m);
  assert.match(output, /^refund side effects: 1 /m);
  assert.match(output, /^verify: hash chain intact over \d+ events$/m);
  assert.match(output, /^contract held: /m);
});

test('`pnpm demo:openai` without its settings says how to set them and exits 0', () => {
  const { code, output } = runScript('demo:openai', noOpenAi);
  assert.equal(code, 0, output);
  assert.match(output, /not set: LOOM_OPENAI_BASE_URL, OPENAI_API_KEY, LOOM_OPENAI_MODEL\./);
  assert.match(output, /^ {2}export LOOM_OPENAI_BASE_URL=/m);
});

test('`pnpm demo:flow` still runs the flow demo: SIGKILLed mid-step, resumed, verified', () => {
  const { code, output } = runScript('demo:flow');
  assert.equal(code, 0, output);
  assert.match(output, /💥 SIGKILL to pid \d+, in the middle of that step/);
  assert.match(output, /result: order order-42 done: 5 steps/);
  assert.match(output, /^verify: hash chain intact over \d+ events$/m);
});

test('test-summary.mjs prints the slowest tests with their package and each package its test time', () => {
  const tree = join(scratch, 'summary');
  const report = (dir, startTime, files) => {
    const full = join(tree, dir);
    cpSync(join(root, 'package.json'), join(full, 'package.json'));
    const testResults = files.map(([file, endTime, durations]) => ({
      name: join(full, file),
      startTime,
      endTime,
      assertionResults: durations.map((duration, index) => ({
        fullName: `case ${index}`,
        duration,
        status: 'passed',
      })),
    }));
    const count = testResults.reduce((sum, file) => sum + file.assertionResults.length, 0);
    writeFileSync(
      join(full, '.vitest-report.json'),
      JSON.stringify({
        numPassedTests: count,
        numFailedTests: 0,
        numPendingTests: 0,
        numTodoTests: 0,
        startTime,
        testResults,
      }),
    );
  };
  report('packages/slow', 1_000, [
    ['src/a.test.ts', 91_000, [40_000, 5]],
    ['test/b.test.ts', 61_000, [50_000]],
  ]);
  report('plugins/quick', 5_000, [
    ['src/c.test.ts', 7_500, Array.from({ length: 25 }, (_, i) => i)],
  ]);
  const output = execFileSync('node', [join(root, 'scripts/test-summary.mjs')], {
    cwd: tree,
    encoding: 'utf8',
  });
  const lines = output.trimEnd().split('\n');
  assert.equal(lines.at(-1), '28 passed, 0 failed');
  assert.equal(
    lines.at(-2),
    'test summary by package (passed, test time): packages/slow: 3 in 90.0 s, plugins/quick: 25 in 2.5 s',
  );
  assert.equal(lines[0], 'slowest 20 tests:');
  assert.match(lines[1], /^ +50\.0 s {2}packages\/slow {2}test\/b\.test\.ts > case 0$/);
  assert.match(lines[2], /^ +40\.0 s {2}packages\/slow {2}src\/a\.test\.ts > case 0$/);
  assert.match(lines[3], /^ +0\.0 s {2}plugins\/quick {2}src\/c\.test\.ts > case 24$/);
  assert.equal(lines.length, 1 + 20 + 2);
});

test('`pnpm test` names each failed test last, with its message, so a log tail shows it', () => {
  const tree = join(scratch, 'failing');
  cpSync(join(root, 'scripts/test-packages.mjs'), join(tree, 'scripts/test-packages.mjs'));
  // Each package's `test` writes the report its vitest would, from the file named by its script.
  const pkg = (dir, script, report) => {
    const full = join(tree, dir);
    mkdirSync(full, { recursive: true });
    writeFileSync(
      join(full, 'package.json'),
      JSON.stringify({ name: `@fake/${dir.split('/').at(-1)}`, scripts: { test: script } }),
    );
    if (report !== undefined) {
      writeFileSync(
        join(full, 'report.mjs'),
        `import { writeFileSync } from 'node:fs';
writeFileSync('.vitest-report.json', ${JSON.stringify(JSON.stringify(report(full)))});
process.exit(${JSON.stringify(report(full).numFailedTests > 0 ? 1 : 0)});`,
      );
    }
  };
  const result = (full, status, failureMessages = []) => ({
    numFailedTests: status === 'failed' ? 1 : 0,
    testResults: [
      {
        name: join(full, 'src/a.test.ts'),
        status,
        assertionResults: [
          { fullName: 'works', status: 'passed', failureMessages: [] },
          { fullName: 'kills and resumes', status, failureMessages },
        ],
      },
    ],
  });
  pkg('packages/good', 'node report.mjs', (full) => result(full, 'passed'));
  pkg('packages/bad', 'node report.mjs', (full) =>
    result(full, 'failed', [
      `AssertionError: expected 128 to be 0\n    at a.test.ts:12:3\n${'x\n'.repeat(20)}`,
    ]),
  );
  pkg('plugins/crashed', 'node -e "process.exit(3)"');
  let output = '';
  assert.throws(
    () => {
      try {
        execFileSync('node', [join(tree, 'scripts/test-packages.mjs')], {
          cwd: tree,
          encoding: 'utf8',
          env: { ...process.env, LOOM_TEST_CONCURRENCY: '1' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
      } catch (error) {
        output = error.stdout;
        throw error;
      }
    },
    (error) => error.status === 1,
  );
  const closing = output.slice(output.indexOf('test-packages: failed: ')).trimEnd();
  const message = [
    'AssertionError: expected 128 to be 0',
    '    at a.test.ts:12:3',
    ...Array(6).fill('x'),
  ];
  assert.equal(
    closing,
    [
      'test-packages: failed: @fake/bad, @fake/crashed',
      'test-packages: @fake/bad: FAILED src/a.test.ts > kills and resumes',
      `    ${message.join('\n    ')}`,
      'test-packages: @fake/crashed: this run wrote no report (it ended before vitest wrote one)',
    ].join('\n'),
  );
});

test('ensure-postgres.sh vacuums the catalogs of database test that a run left full of dead rows', () => {
  const psql = (sql) =>
    execFileSync('psql', ['-h', '127.0.0.1', '-U', 'root', '-d', 'test', '-Atqc', sql], {
      encoding: 'utf8',
    }).trim();
  const deadAttributes = () =>
    Number(psql("SELECT n_dead_tup FROM pg_stat_sys_tables WHERE relname = 'pg_attribute'"));
  // 1,000 tables of 6 columns made and dropped: 12,000 dead pg_attribute rows (6 system columns
  // each), past the script's threshold of 10,000, as a suite's throwaway schemas leave them.
  const schema = `loom_bloat_${process.pid}`;
  psql(
    `CREATE SCHEMA ${schema}; DO $$ BEGIN FOR i IN 1..1000 LOOP EXECUTE format('CREATE TABLE ${schema}.t%s (a int, b int, c int, d int, e int, f int)', i); END LOOP; END $$; DROP SCHEMA ${schema} CASCADE`,
  );
  // The dropping session's counts reach the statistics when it ends, which psql's exit did.
  assert.ok(deadAttributes() > 10_000, `dead pg_attribute rows: ${deadAttributes()}`);
  const output = execFileSync('bash', [join(root, 'scripts/ensure-postgres.sh')], {
    encoding: 'utf8',
  });
  assert.match(output, /vacuuming the catalogs of database test .*pg_catalog\.pg_attribute/);
  assert.equal(deadAttributes(), 0);
  // Nothing left to do: the next run says only that the server is up.
  const again = execFileSync('bash', [join(root, 'scripts/ensure-postgres.sh')], {
    encoding: 'utf8',
  });
  assert.doesNotMatch(again, /vacuuming/);
});
