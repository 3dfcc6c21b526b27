// Loom installed the way docs/getting-started.md says, from a registry: every public @loom
// package is published to a throwaway verdaccio (from its built dist: packed by pnpm, published
// by npm, the two steps of the `pnpm publish` that `changeset publish` runs), then two empty
// projects outside the workspace, whose .npmrc takes `@loom/*` from there, install Loom, one
// with `npm install`, one with `pnpm add`, and run the guide's first agent (the ts block that
// starts `// agent.mjs`, read from the guide itself) on a SQLite file.
//
// better-sqlite3's native addon: npm would download a prebuilt one from GitHub (unreachable here)
// and then compile it (over two minutes on two cores); pnpm skips the build unless allowed. So
// both installs leave it unbuilt (npm: `--ignore-scripts`; pnpm: its default) and the addon the
// workspace's own install built is copied in: same better-sqlite3 version (the installs pin the
// workspace's, and it is asserted), same Node.
import {
  copyFileSync,
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
import { dirname, join } from 'node:path';
import { killTestProcesses, spawnTestCommand } from '@loom/event-runtime/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalRegistry, startLocalRegistry } from './local-registry.test-support.js';
import { deadLinks } from './packed-links.test-support.js';
import {
  childEnv,
  type Manifest,
  packAll,
  publicPackages,
  publishPacked,
  publishScripts,
  repositoryRoot,
  workspacePackages,
} from './workspace-packages.test-support.js';

/**
 * Longest one install may take: every third-party package is fetched into an empty cache (10 s
 * on a quiet box, 45 s at a load average of 20). The two run at once, in one 60 s hook.
 */
const installWaitMs = 55_000;
/** Longest a run of the agent, or one `loom` command, may take (two fit in one 60 s test). */
const runWaitMs = 25_000;
/** Longest one HTTP call to the registry may take. */
const requestTimeoutMs = 10_000;

const published = publicPackages();
const kernel = published.find((pkg) => pkg.manifest.name === '@loom/event-runtime');
if (kernel === undefined) throw new Error('@loom/event-runtime is not a public package');
/** The better-sqlite3 the workspace installed and built. */
const workspaceSqlite = dirname(
  createRequire(join(kernel.dir, 'package.json')).resolve('better-sqlite3/package.json'),
);
const sqliteVersion = readManifest(workspaceSqlite).version;

const answer = 'goal_completed: Order A-17 has shipped and arrives tomorrow.';

/** The repository's license: every package's tarball carries it, byte for byte. */
const license = readFileSync(join(repositoryRoot, 'LICENSE'), 'utf8');

/** Every file under `dir`, as paths relative to it with `/` separators. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    return entry.isDirectory() ? filesUnder(dir, path) : [path];
  });
}

/** The installed @loom packages of a project: each one's folder. */
function installedLoom(project: string): string[] {
  const scope = join(project, 'node_modules', '@loom');
  return readdirSync(scope).map((name) => join(scope, name));
}

/** Each installed @loom package carries the repository's LICENSE. */
function expectLicensed(folders: string[]): void {
  for (const folder of folders) {
    const file = join(folder, 'LICENSE');
    expect(existsSync(file), `${folder}: no LICENSE`).toBe(true);
    expect(readFileSync(file, 'utf8') === license, `${file} differs from the repository's`).toBe(
      true,
    );
  }
}

function readManifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
}

/** The guide's first agent: the ts block of docs/getting-started.md that starts `// agent.mjs`. */
function firstAgentSource(): string {
  const guide = readFileSync(join(repositoryRoot, 'docs', 'getting-started.md'), 'utf8');
  const block = /^```ts\n(\/\/ agent\.mjs[\s\S]*?)^```$/m.exec(guide);
  if (block?.[1] === undefined) {
    throw new Error('docs/getting-started.md has no ```ts block starting with `// agent.mjs`');
  }
  return block[1];
}

/** Copies the workspace's built better-sqlite3 addon into a project's installed copy. */
function copySqliteAddon(project: string): void {
  const installed = join(project, 'node_modules', 'better-sqlite3');
  expect(
    readManifest(installed).version,
    'the addon fits only the better-sqlite3 version that built it',
  ).toBe(sqliteVersion);
  const addon = join('build', 'Release', 'better_sqlite3.node');
  if (!existsSync(join(workspaceSqlite, addon))) {
    throw new Error(`no built addon at ${join(workspaceSqlite, addon)}: run pnpm install first`);
  }
  mkdirSync(join(installed, 'build', 'Release'), { recursive: true });
  copyFileSync(join(workspaceSqlite, addon), join(installed, addon));
}

/** Runs a command in a project to its end; fails with its output unless it exits 0. */
async function inProject(
  project: string,
  command: string,
  args: string[],
  waitMs = runWaitMs,
): Promise<string> {
  const { stdout } = await spawnTestCommand(command, {
    name: `${command} ${args[0] ?? ''}`,
    args,
    cwd: project,
    env: childEnv({}),
    deadlineMs: waitMs,
  }).succeeded();
  return stdout;
}

interface Packument {
  'dist-tags': Record<string, string>;
  versions: Record<string, Manifest & { dist: { integrity: string } }>;
}

/** A package's registry document, or null for a 404. */
async function packument(registry: LocalRegistry, name: string): Promise<Packument | null> {
  const response = await fetch(`${registry.url}${name.replace('/', '%2f')}`, {
    signal: AbortSignal.timeout(requestTimeoutMs),
  });
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`GET ${name} from the registry: ${response.status}`);
  return (await response.json()) as Packument;
}

/** The integrity of what was published as `name@version`. */
async function publishedIntegrity(
  registry: LocalRegistry,
  name: string,
  version: string,
): Promise<string | undefined> {
  return (await packument(registry, name))?.versions[version]?.dist.integrity;
}

/** `name@version` and integrity of each @loom package in a lockfile. */
interface Locked {
  name: string;
  version: string;
  integrity: string;
}

/** The @loom entries of an npm package-lock.json. */
function npmLocked(project: string): Locked[] {
  const lock = JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; integrity?: string }>;
  };
  return Object.entries(lock.packages)
    .filter(([path]) => path.startsWith('node_modules/@loom/'))
    .map(([path, entry]) => ({
      name: path.slice('node_modules/'.length),
      version: entry.version ?? '(none)',
      integrity: entry.integrity ?? '(none)',
    }));
}

/** The @loom entries of a pnpm-lock.yaml (its `packages:` keys and their resolution). */
function pnpmLocked(project: string): Locked[] {
  const lock = readFileSync(join(project, 'pnpm-lock.yaml'), 'utf8');
  const entries = lock.matchAll(
    /^ {2}'?(@loom\/[^@']+)@([^':]+)'?:\n {4}resolution: \{integrity: ([^,}\s]+)/gm,
  );
  return [...entries].map(([, name = '', version = '', integrity = '']) => ({
    name,
    version,
    integrity,
  }));
}

/** Every locked @loom entry is the tarball published here: same bytes. */
async function expectPublishedHere(registry: LocalRegistry, locked: Locked[]): Promise<void> {
  for (const entry of locked) {
    expect(entry.integrity, `${entry.name}@${entry.version} in the lockfile`).toBe(
      await publishedIntegrity(registry, entry.name, entry.version),
    );
  }
}

/** Each phase's wall time, printed: the README's figures come from these lines. */
function phase(what: string, sinceMs: number): void {
  console.log(`release-check: ${what} in ${((Date.now() - sinceMs) / 1000).toFixed(1)} s`);
}

describe.concurrent('Loom from a registry, as a user installs it', () => {
  let work = '';
  let registry: LocalRegistry | undefined;
  const needRegistry = (): LocalRegistry => {
    if (registry === undefined) throw new Error('the registry did not start (see beforeAll)');
    return registry;
  };

  // One step per hook, each within the suite's 60 s: the registry, the pack, the publish, then
  // both installs at once (the tests after them check and run what they installed).
  const tarballs = () => join(work, 'tarballs');
  let npmProject = '';
  let pnpmProject = '';

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'loom-release-check-'));
    const since = Date.now();
    registry = await startLocalRegistry(work);
    phase(`verdaccio up at ${registry.url}`, since);
  });

  beforeAll(async () => {
    const since = Date.now();
    mkdirSync(tarballs());
    await packAll(published, needRegistry(), tarballs());
    phase(`packed ${published.length} packages`, since);
  });

  beforeAll(async () => {
    const since = Date.now();
    await publishPacked(needRegistry(), tarballs());
    phase(`published ${published.length} packages`, since);
  });

  beforeAll(async () => {
    const local = needRegistry();
    npmProject = emptyProject('npm-project', local);
    pnpmProject = emptyProject('pnpm-project', local);
    await Promise.all([
      (async () => {
        const since = Date.now();
        await inProject(npmProject, 'npm', ['init', '-y']);
        await install(npmProject, 'npm', [
          'install',
          '@loom/agent-loop',
          '@loom/reasoning',
          '@loom/workflow-runtime',
          `better-sqlite3@${sqliteVersion}`,
          '--cache',
          join(work, 'npm-cache'),
          '--ignore-scripts',
          '--no-audit',
          '--no-fund',
          '--loglevel=error',
        ]);
        phase('npm install', since);
      })(),
      (async () => {
        const since = Date.now();
        await inProject(pnpmProject, 'pnpm', ['init']);
        await install(pnpmProject, 'pnpm', [
          'add',
          '@loom/agent-loop',
          '@loom/reasoning',
          '@loom/workflow-runtime',
          '@loom/view',
          `better-sqlite3@${sqliteVersion}`,
          '--store-dir',
          join(work, 'pnpm-store'),
          '--cache-dir',
          join(work, 'pnpm-cache'),
        ]);
        phase('pnpm add', since);
      })(),
    ]);
  });

  afterAll(async () => {
    await registry?.stop();
    await killTestProcesses();
    if (work !== '') rmSync(work, { recursive: true, force: true });
  });

  /**
   * A new empty folder for one project, whose .npmrc takes the `@loom` scope from the local
   * registry; every other package comes from the registry the machine is set up with.
   */
  function emptyProject(name: string, registry: LocalRegistry): string {
    const project = join(work, name);
    mkdirSync(project);
    writeFileSync(join(project, '.npmrc'), `@loom:registry=${registry.url}\n`);
    return project;
  }

  /** Runs an install in a project; a failure also quotes what verdaccio printed. */
  async function install(project: string, command: string, args: string[]): Promise<void> {
    try {
      await inProject(project, command, args, installWaitMs);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(`${message}\nverdaccio printed:\n${needRegistry().output()}`, {
        cause: error,
      });
    }
  }

  it('publishes every public package at its version with workspace: ranges rewritten, and no private one', async () => {
    const local = needRegistry();
    const versions = new Map(published.map((pkg) => [pkg.manifest.name, pkg.manifest.version]));
    for (const { manifest } of published) {
      // None runs a script around packing: pnpm pack + npm publish is what pnpm publish does.
      const aroundPacking = Object.keys(manifest.scripts ?? {}).filter((script) =>
        publishScripts.includes(script),
      );
      expect(aroundPacking, `${manifest.name}: scripts pnpm publish would run`).toEqual([]);
      const document = await packument(local, manifest.name);
      expect(document, `${manifest.name} on the registry`).not.toBeNull();
      expect(document?.['dist-tags'].latest).toBe(manifest.version);
      const served = document?.versions[manifest.version];
      expect(served?.description).toBe(manifest.description);
      for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies'] as const) {
        for (const [name, range] of Object.entries(served?.[field] ?? {})) {
          expect(range, `${manifest.name} ${field}.${name}`).not.toMatch(/^workspace:/);
          // Published together: each @loom range is the version published beside it.
          if (versions.has(name)) {
            expect(range, `${manifest.name} → ${name}`).toBe(versions.get(name));
          }
        }
      }
    }
    for (const { manifest } of workspacePackages().filter((pkg) => pkg.manifest.private)) {
      expect(await packument(local, manifest.name), `private ${manifest.name}`).toBeNull();
    }
  });

  it("every tarball carries the LICENSE, and its README's relative links stay inside it", async () => {
    const unpacked = join(work, 'unpacked');
    const packed = readdirSync(tarballs()).filter((file) => file.endsWith('.tgz'));
    expect(packed).toHaveLength(published.length);
    for (const tarball of packed) {
      const into = join(unpacked, tarball);
      mkdirSync(into, { recursive: true });
      await spawnTestCommand('tar', {
        name: `tar -x ${tarball}`,
        args: ['-xzf', join(tarballs(), tarball), '-C', into],
        deadlineMs: runWaitMs,
      }).succeeded();
      const root = join(into, 'package');
      const files = filesUnder(root);
      expect(files, tarball).toContain('LICENSE');
      expect(files, tarball).toContain('README.md');
      expect(readFileSync(join(root, 'LICENSE'), 'utf8') === license, `${tarball}: LICENSE`).toBe(
        true,
      );
      expect(
        deadLinks(readFileSync(join(root, 'README.md'), 'utf8'), files),
        `${tarball}: README links that lead nowhere on a registry's page`,
      ).toEqual([]);
    }
  });

  it('npm install: the first agent runs on a SQLite file, and a second process gets its result from the log', async () => {
    const local = needRegistry();
    const project = npmProject;
    const locked = npmLocked(project);
    // agent-loop and what it depends on; no other @loom package.
    expect(locked.map((entry) => entry.name).sort()).toEqual([
      '@loom/agent-loop',
      '@loom/event-runtime',
      '@loom/middleware',
      '@loom/reasoning',
      '@loom/render',
      '@loom/workflow-runtime',
    ]);
    await expectPublishedHere(local, locked);
    expectLicensed(installedLoom(project));
    copySqliteAddon(project);
    writeFileSync(join(project, 'agent.mjs'), firstAgentSource());

    const since = Date.now();
    const first = await inProject(project, process.execPath, ['agent.mjs']);
    expect(first.trim()).toBe(`${answer} (tool runs in this process: 1)`);
    expect(existsSync(join(project, 'loom.db'))).toBe(true);
    const second = await inProject(project, process.execPath, ['agent.mjs']);
    expect(second.trim()).toBe(`${answer} (tool runs in this process: 0)`);
    phase('npm project: two runs of the agent', since);
  });

  it('pnpm add: the first agent runs, and the installed loom command shows the finished run', async () => {
    const local = needRegistry();
    const project = pnpmProject;
    // pnpm links only what the project lists: the four it added.
    expect(readdirSync(join(project, 'node_modules', '@loom')).sort()).toEqual([
      'agent-loop',
      'reasoning',
      'view',
      'workflow-runtime',
    ]);
    const locked = pnpmLocked(project);
    expect(locked.map((entry) => entry.name)).toContain('@loom/plugin-crypto'); // through view
    await expectPublishedHere(local, locked);
    // Through pnpm's store: the four linked and what they depend on (plugin-crypto through view).
    const store = join(project, 'node_modules', '.pnpm');
    const stored = readdirSync(store)
      .filter((entry) => entry.startsWith('@loom+'))
      .map((entry) => {
        // `@loom+agent-loop@0.3.0_…` holds node_modules/@loom/agent-loop.
        const name = entry.slice(0, entry.indexOf('@', 1)).replace('+', '/');
        return join(store, entry, 'node_modules', name);
      });
    expect(stored.length).toBeGreaterThanOrEqual(locked.length);
    expectLicensed([...installedLoom(project), ...stored]);
    copySqliteAddon(project);
    writeFileSync(join(project, 'agent.mjs'), firstAgentSource());

    const since = Date.now();
    const run = await inProject(project, process.execPath, ['agent.mjs']);
    expect(run.trim()).toBe(`${answer} (tool runs in this process: 1)`);
    const shown = JSON.parse(
      await inProject(project, join(project, 'node_modules', '.bin', 'loom'), [
        'show',
        'ticket-1',
        '--db',
        'sqlite:loom.db',
        '--json',
      ]),
    ) as { run: { status: string; terminalReason: string; agent: string } };
    expect(shown.run).toMatchObject({
      status: 'completed',
      terminalReason: 'goal_completed',
      agent: 'support',
    });
    phase('pnpm project: the agent and loom show', since);
  });
});
