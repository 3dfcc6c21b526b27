// The packages a release publishes, and publishing them the way `changeset publish` does.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnTestCommand } from '@loom/event-runtime/testing';

/** The repository root. */
export const repositoryRoot = join(import.meta.dirname, '..', '..', '..');

/** Longest packing every public package may take (a test hook has 60 s in all). */
const packWaitMs = 55_000;
/** Longest one `npm publish` may take (they run `publishConcurrency` at a time). */
const publishWaitMs = 25_000;

/** What the check reads of a package.json. */
export interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  description?: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  scripts?: Record<string, string>;
}

/** A workspace package: its folder and its package.json. */
export interface WorkspacePackage {
  dir: string;
  manifest: Manifest;
}

/** The folders of pnpm-workspace.yaml. */
const workspaceGroups = ['packages', 'plugins', 'tools'];

/** Every workspace package, in folder order. */
export function workspacePackages(): WorkspacePackage[] {
  const found: WorkspacePackage[] = [];
  for (const group of workspaceGroups) {
    for (const name of readdirSync(join(repositoryRoot, group)).sort()) {
      const file = join(repositoryRoot, group, name, 'package.json');
      if (!existsSync(file)) continue; // a planned package: a README only
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as Manifest;
      found.push({ dir: join(repositoryRoot, group, name), manifest });
    }
  }
  return found;
}

/** What `changeset publish` publishes: every workspace package not marked `private`. */
export function publicPackages(): WorkspacePackage[] {
  return workspacePackages().filter((pkg) => pkg.manifest.private !== true);
}

/**
 * The environment of a package-manager child: this one's, without the `npm_*` / `pnpm_*`
 * variables a `pnpm test` run sets (a `npm_config_registry` there would outrank the project's
 * .npmrc), plus `extra`.
 */
export function childEnv(extra: Record<string, string>): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const key of Object.keys(process.env)) {
    if (/^(npm|pnpm)_/i.test(key)) env[key] = undefined;
  }
  return { ...env, ...extra };
}

/**
 * The lifecycle scripts `pnpm publish` runs around packing. A public package has none, so
 * {@link publishAll}'s two steps are exactly what `pnpm publish` does.
 */
export const publishScripts = [
  'prepublish',
  'prepublishOnly',
  'prepack',
  'prepare',
  'postpack',
  'publish',
  'postpublish',
];

/** How many `npm publish` run at once (each is a Node process of about a second of CPU). */
const publishConcurrency = 4;

/**
 * Publishes `packages` from their folders (their built `dist`, per `files`) as `changeset
 * publish` does in a pnpm workspace, where it runs `pnpm publish --access public --tag latest
 * --no-git-checks` in each: pnpm 10's publish packs the package (rewriting `workspace:` ranges
 * to the versions in the workspace) and hands the tarball to `npm publish`. Here the two steps
 * are split so one `pnpm -r pack` packs them all (one pnpm start instead of ten: about 15 s
 * less on two cores) into `tarballs` (`packAll`), then `publishPacked` runs `npm publish <tarball>
 * --access public --tag latest` for each. Two calls, so each fits a test hook of its own.
 */
export async function packAll(
  packages: readonly WorkspacePackage[],
  registry: { npmrc: string },
  tarballs: string,
): Promise<void> {
  const env = childEnv({ npm_config_userconfig: registry.npmrc });
  await spawnTestCommand('pnpm', {
    name: 'pnpm -r pack',
    args: [
      '-r',
      ...packages.flatMap((pkg) => ['--filter', pkg.manifest.name]),
      'pack',
      '--pack-destination',
      tarballs,
    ],
    cwd: repositoryRoot,
    env,
    deadlineMs: packWaitMs,
  }).succeeded();
  const packed = readdirSync(tarballs).filter((file) => file.endsWith('.tgz'));
  if (packed.length !== packages.length) {
    throw new Error(`packed ${packed.length} tarballs for ${packages.length} packages: ${packed}`);
  }
}

/** Publishes every tarball `packAll` left in `tarballs`, `publishConcurrency` at a time. */
export async function publishPacked(
  registry: { url: string; npmrc: string },
  tarballs: string,
): Promise<void> {
  const env = childEnv({ npm_config_userconfig: registry.npmrc });
  const queue = readdirSync(tarballs).filter((file) => file.endsWith('.tgz'));
  const worker = async () => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      await spawnTestCommand('npm', {
        name: `npm publish ${file}`,
        args: [
          'publish',
          join(tarballs, file),
          '--registry',
          registry.url,
          '--access',
          'public',
          '--tag',
          'latest',
          '--no-update-notifier',
          '--loglevel=error',
        ],
        cwd: tarballs,
        env,
        deadlineMs: publishWaitMs,
      }).succeeded();
    }
  };
  await Promise.all(Array.from({ length: publishConcurrency }, worker));
}
