// The TypeScript scripts that process tests spawn run as plain JavaScript: each is bundled once
// with esbuild (bundle-test-script.ts) into its package's .test-scripts folder, and reused while
// none of its files changed. Node then starts it without a TypeScript loader, about 0.3 s of CPU
// less per spawn than `node --import tsx` (the suite spawns several hundred). Without esbuild
// installed, or with LOOM_TEST_SCRIPTS=tsx, scripts run under tsx as before.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BundleInput } from './bundle-test-script.js';

/** Whether esbuild can be loaded from here (an optional peer of the testing helpers). */
let esbuildFound: boolean | undefined;

function hasEsbuild(): boolean {
  if (esbuildFound === undefined) {
    try {
      createRequire(import.meta.url).resolve('esbuild');
      esbuildFound = true;
    } catch {
      esbuildFound = false;
    }
  }
  return esbuildFound;
}

/** The folder of the package that holds `file` (its nearest package.json), or undefined. */
function packageFolder(file: string): string | undefined {
  for (let folder = dirname(file); ; folder = dirname(folder)) {
    if (existsSync(join(folder, 'package.json'))) return folder;
    if (dirname(folder) === folder) return undefined;
  }
}

/** True when `out` exists and every file it was bundled from is unchanged. */
function current(out: string): boolean {
  let inputs: BundleInput[];
  try {
    inputs = JSON.parse(readFileSync(`${out}.inputs.json`, 'utf8')) as BundleInput[];
    if (!existsSync(out)) return false;
  } catch {
    return false;
  }
  for (const input of inputs) {
    try {
      const stat = statSync(input.path);
      if (stat.size !== input.size || stat.mtimeMs !== input.mtimeMs) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/** The bundler script beside this module: built JavaScript, or the TypeScript source under tsx. */
function bundlerCommand(): string[] {
  const built = fileURLToPath(new URL('./bundle-test-script.js', import.meta.url));
  if (existsSync(built)) return [built];
  return ['--import', 'tsx', fileURLToPath(new URL('./bundle-test-script.ts', import.meta.url))];
}

/**
 * The plain JavaScript bundle of the TypeScript script `file` (an absolute path), built now if it is missing or
 * stale; undefined where scripts should run under tsx instead (not TypeScript, no esbuild, or
 * LOOM_TEST_SCRIPTS=tsx). Throws, with esbuild's message, when the script does not compile.
 */
export function bundledTestScript(file: string): string | undefined {
  if (process.env.LOOM_TEST_SCRIPTS === 'tsx') return undefined;
  if (!/\.[cm]?ts$/.test(file) || !hasEsbuild()) return undefined;
  const home = packageFolder(file);
  if (home === undefined) return undefined;
  const hash = createHash('sha256').update(file).digest('hex').slice(0, 12);
  // In the package (its imports, its own name included, resolve as from its source), not under
  // node_modules: a file there is outside the package's scope and cannot import it by name.
  const out = join(home, '.test-scripts', `${basename(file, extname(file))}-${hash}.mjs`);
  if (current(out)) return out;
  try {
    execFileSync(process.execPath, [...bundlerCommand(), file, out], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // Inside this package, where esbuild (and tsx, for the source) resolve.
      cwd: fileURLToPath(new URL('.', import.meta.url)),
    });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`could not bundle the test script ${file}: ${stderr || String(error)}`);
  }
  return out;
}

/**
 * Node's arguments that run the TypeScript script `file` as {@link spawnTestProcess} does (its
 * bundle, or `--import tsx <file>`), for a child spawned by other means (an MCP stdio transport).
 */
export function testScriptArgs(file: string): string[] {
  const bundle = bundledTestScript(file);
  return bundle === undefined ? ['--import', 'tsx', file] : [bundle];
}
