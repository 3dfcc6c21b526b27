// Installs Loom as a user would: packs every publishable package (`pnpm pack` rewrites the
// workspace: protocol to real versions), installs the tarballs with npm into an empty project
// outside the workspace, and uses them from there (issue 18):
//  1. memory: only the tarballs (no optional peer: pg, better-sqlite3, @opentelemetry/api,
//     vitest, fast-check, @ai-sdk/provider), every root entry imported from plain Node ESM, one flow run in
//     memory, and a TypeScript consumer type-checked under moduleResolution NodeNext and Bundler;
//  2. durable: pg and better-sqlite3 (and their @types) added, one flow run on a SQLite file and
//     one on the local PostgreSQL, and the /sqlite and /postgres entries type-checked the same
//     two ways.
// Also checks every publishable package.json carries the metadata a registry page needs, and
// that each tarball holds the files its exports name and nothing built for the workspace only.
// Any failed import, check or install exits 1. Run by `bash scripts/dev.sh test` after the build.
//
// Offline-friendly: third-party packages come through npm's cache (--prefer-offline: the
// registry is asked only for what the cache lacks), and better-sqlite3 is installed without its
// install script and given the native addon the workspace's install already built (same
// version, same Node), instead of compiling it again for minutes.
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
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const fixtures = join(import.meta.dirname, 'pack-install');
const started = Date.now();
const say = (line) =>
  console.log(`pack-install: ${line} (${((Date.now() - started) / 1000).toFixed(1)} s)`);

/** Fields a published package.json must carry, each with what makes it complete. */
const requiredMetadata = {
  description: (value) => typeof value === 'string' && value.length > 0,
  license: (value) => typeof value === 'string' && value.length > 0,
  repository: (value) => typeof value?.url === 'string' && typeof value?.directory === 'string',
  keywords: (value) => Array.isArray(value) && value.length > 0,
  files: (value) => Array.isArray(value) && value.includes('dist'),
  sideEffects: (value) => value === false || Array.isArray(value),
  engines: (value) => typeof value?.node === 'string',
  exports: (value) => typeof value === 'object' && value !== null,
  publishConfig: (value) => value?.access === 'public',
};
/** Built for the workspace only: never in a tarball. */
const workspaceOnly = /(^|\/)(\.tsbuildinfo|.*\.(test|bench)\.[cm]?[jt]s|.*\.map)$/;

function run(command, args, options = {}) {
  try {
    return execFileSync(command, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      ...options,
    });
  } catch (error) {
    process.stderr.write(`${error.stdout ?? ''}${error.stderr ?? ''}`);
    throw new Error(`pack-install: \`${command} ${args.join(' ')}\` failed (exit ${error.status})`);
  }
}

const publishable = [];
for (const group of ['packages', 'plugins', 'tools']) {
  for (const name of readdirSync(join(root, group)).sort()) {
    const file = join(root, group, name, 'package.json');
    if (!existsSync(file)) continue; // planned: a README only
    const manifest = JSON.parse(readFileSync(file, 'utf8'));
    if (manifest.private === true) continue;
    publishable.push({ dir: join(root, group, name), manifest });
  }
}
assert.ok(publishable.length > 0, 'no publishable package found');
for (const { dir, manifest } of publishable) {
  for (const [field, complete] of Object.entries(requiredMetadata)) {
    assert.ok(
      complete(manifest[field]),
      `${manifest.name}: package.json field '${field}' is missing or incomplete`,
    );
  }
  assert.equal(
    manifest.repository.directory,
    relative(root, dir),
    `${manifest.name}: repository.directory`,
  );
}
say(`metadata complete for ${publishable.map((p) => p.manifest.name).join(', ')}`);

const work = mkdtempSync(join(tmpdir(), 'loom-pack-install-'));
try {
  const tarballs = join(work, 'tarballs');
  mkdirSync(tarballs);
  for (const { dir } of publishable) {
    run('pnpm', ['pack', '--pack-destination', tarballs], { cwd: dir });
  }
  const packed = readdirSync(tarballs).map((file) => join(tarballs, file));
  assert.equal(packed.length, publishable.length, 'one tarball per publishable package');
  for (const tarball of packed) {
    const listing = run('tar', ['-tzf', tarball]).split('\n').filter(Boolean);
    const stray = listing.filter((path) => workspaceOnly.test(path));
    assert.deepEqual(stray, [], `${tarball}: workspace-only files packed`);
    const manifest = run('tar', ['-xzOf', tarball, 'package/package.json']);
    assert.doesNotMatch(manifest, /workspace:/, `${tarball}: a workspace: range survived packing`);
  }
  say(`packed ${packed.length} tarballs`);

  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    `${JSON.stringify({ name: 'loom-pack-install', private: true, type: 'module' }, null, 2)}\n`,
  );
  for (const file of readdirSync(fixtures)) cpSync(join(fixtures, file), join(app, file));
  const npm = (...args) =>
    run('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], {
      cwd: app,
    });
  const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
  const typeCheck = (file) => {
    const common = ['--noEmit', '--strict', '--target', 'es2022', '--skipLibCheck', 'false', file];
    run(
      process.execPath,
      [tsc, ...common, '--module', 'nodenext', '--moduleResolution', 'nodenext'],
      { cwd: app },
    );
    run(process.execPath, [tsc, ...common, '--module', 'esnext', '--moduleResolution', 'bundler'], {
      cwd: app,
    });
  };

  // 1. memory: the tarballs alone.
  npm('install', ...packed);
  const installed = join(app, 'node_modules');
  for (const { manifest } of publishable) {
    const dir = join(installed, manifest.name);
    const got = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    // Not a same-named package from the registry: ours, at our version.
    assert.equal(got.version, manifest.version, `${manifest.name}: installed version`);
    assert.equal(
      got.description,
      manifest.description,
      `${manifest.name}: installed from our tarball`,
    );
    for (const [entry, targets] of Object.entries(got.exports)) {
      for (const target of Object.values(targets)) {
        assert.ok(
          existsSync(join(dir, target)),
          `${manifest.name} export '${entry}': ${target} is not in the tarball`,
        );
      }
    }
  }
  // zod: the AI SDK providers' peer, never Loom's.
  const optionalPeers = ['pg', 'better-sqlite3', '@opentelemetry/api', 'vitest', 'fast-check'];
  for (const peer of [...optionalPeers, '@ai-sdk/provider', 'zod', 'gpt-tokenizer']) {
    assert.ok(
      !existsSync(join(installed, peer)),
      `${peer} was installed though it is an optional peer`,
    );
  }
  say('installed the tarballs without any optional peer');
  process.stdout.write(run(process.execPath, ['memory.mjs'], { cwd: app }));
  typeCheck('memory.ts');
  say('memory.ts type-checks under NodeNext and Bundler');

  // 2. durable: the drivers the user chooses, at the versions the workspace tests with.
  const kernel = publishable.find((p) => p.manifest.name === '@loom/event-runtime');
  assert.ok(kernel, '@loom/event-runtime is publishable');
  const dev = kernel.manifest.devDependencies;
  const drivers = ['pg', 'better-sqlite3', '@types/pg', '@types/better-sqlite3'];
  npm('install', '--ignore-scripts', ...drivers.map((name) => `${name}@${dev[name]}`));
  const workspaceSqlite = dirname(
    createRequire(join(kernel.dir, 'package.json')).resolve('better-sqlite3/package.json'),
  );
  // The addon is only interchangeable between identical versions (and Node ABIs: same node).
  assert.equal(
    JSON.parse(readFileSync(join(workspaceSqlite, 'package.json'), 'utf8')).version,
    JSON.parse(readFileSync(join(installed, 'better-sqlite3', 'package.json'), 'utf8')).version,
    'the workspace built a different better-sqlite3 than the one installed here',
  );
  const built = join(workspaceSqlite, 'build');
  assert.ok(
    existsSync(join(built, 'Release', 'better_sqlite3.node')),
    `no built better-sqlite3 addon at ${built}: run pnpm install first`,
  );
  cpSync(
    join(built, 'Release', 'better_sqlite3.node'),
    join(installed, 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'),
  );
  say('installed pg and better-sqlite3');
  process.stdout.write(run(process.execPath, ['durable.mjs'], { cwd: app, env: process.env }));
  typeCheck('durable.ts');
  say('durable.ts type-checks under NodeNext and Bundler');
} finally {
  rmSync(work, { recursive: true, force: true });
}
say('ok');
