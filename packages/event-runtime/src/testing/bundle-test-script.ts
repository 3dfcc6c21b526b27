// Bundles a TypeScript test script and every TypeScript file it imports into one ES module, for
// test-script-bundle.ts, which runs this file as a script (`node bundle-test-script.js <entry>
// <out>`): esbuild's synchronous API takes no plugins, and spawning a test process stays
// synchronous. The workspace's own packages (`@loom/*`, their built dist/) are bundled in too:
// a spawned script then reads one file instead of resolving and loading a hundred-odd modules,
// about a quarter less CPU per spawn (0.31 -> 0.24 s for a kill-matrix life, 2026-12-07). Every
// other package stays an import, by the absolute path it resolves to from the file that imports
// it (a bundled package's dependencies need not be the script package's own), resolved as Node
// resolves an `import` (no `module` condition or field). <out>.inputs.json lists the bundled
// files with their sizes and modification times, so a later spawn can tell whether <out> is still
// current without bundling again (a rebuilt dist/ counts). `import.meta.url`, `.dirname` and
// `.filename` in a bundled file become that file's own values, so a file still finds its
// neighbours.

import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

/** A file a bundle was built from, as it was then. */
export interface BundleInput {
  path: string;
  size: number;
  mtimeMs: number;
}

/** The file's own import.meta values, written in as literals. */
const ownImportMeta: Plugin = {
  name: 'own-import-meta',
  setup(esbuild) {
    esbuild.onLoad({ filter: /\.([cm]?tsx?|[cm]?js)$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const contents = source
        .replaceAll('import.meta.dirname', JSON.stringify(dirname(args.path)))
        .replaceAll('import.meta.filename', JSON.stringify(args.path))
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href));
      return { contents, loader: loaderOf(args.path) };
    });
  },
};

/** esbuild's loader for a file it bundles: TypeScript, or the JavaScript of a built package. */
function loaderOf(path: string): 'ts' | 'tsx' | 'js' {
  if (/\.[cm]?js$/.test(path)) return 'js';
  return path.endsWith('x') ? 'tsx' : 'ts';
}

/** The scope of the workspace's packages, bundled in; any other package stays an import. */
const bundledScope = '@loom/';

/**
 * Leaves every package outside {@link bundledScope} as an import of the absolute path it
 * resolves to from its importer, so a bundled package's dependencies resolve from where that
 * package lives, not from the bundle's folder.
 */
const otherPackagesByPath: Plugin = {
  name: 'other-packages-by-path',
  setup(esbuild) {
    esbuild.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.path.startsWith(bundledScope) || args.pluginData === resolving) return undefined;
      if (args.path.startsWith('node:') || builtinModules.includes(args.path)) {
        return { path: args.path, external: true };
      }
      const found = await esbuild.resolve(args.path, {
        kind: args.kind,
        resolveDir: args.resolveDir,
        importer: args.importer,
        pluginData: resolving,
      });
      // Unresolvable here: left as the bare import it was, for Node to report at run time.
      if (found.errors.length > 0) return { path: args.path, external: true };
      return { path: found.path, external: true };
    });
  },
};
/** Marks the plugin's own call to esbuild's resolver, which must not come back to it. */
const resolving = Symbol('resolving');

/**
 * Bundles `entry` (an absolute path) into `out` and writes `<out>.inputs.json`; returns the
 * inputs. Rejects with esbuild's message (each error with its file and line) when it does not
 * compile. Another test process may bundle the same script at once: each writes its own files
 * and renames them into place, so a reader sees a whole bundle or none.
 */
export async function bundleTestScript(entry: string, out: string): Promise<BundleInput[]> {
  const result = await build({
    entryPoints: [entry],
    absWorkingDir: dirname(entry),
    bundle: true,
    platform: 'node',
    // As Node resolves an `import`: no `module` condition, `main` alone.
    conditions: [],
    mainFields: ['main'],
    format: 'esm',
    target: 'node20',
    write: false,
    metafile: true,
    logLevel: 'silent',
    plugins: [otherPackagesByPath, ownImportMeta],
  });
  const inputs = Object.keys(result.metafile.inputs).map((input) => {
    const path = isAbsolute(input) ? input : resolve(dirname(entry), input);
    const stat = statSync(path);
    return { path, size: stat.size, mtimeMs: stat.mtimeMs };
  });
  const code = result.outputFiles[0]?.contents;
  if (code === undefined) throw new Error(`esbuild wrote nothing for ${entry}`);
  mkdirSync(dirname(out), { recursive: true });
  const temporary = `${out}.${process.pid}.tmp`;
  writeFileSync(temporary, code);
  writeFileSync(`${temporary}.inputs`, JSON.stringify(inputs));
  renameSync(temporary, out);
  renameSync(`${temporary}.inputs`, `${out}.inputs.json`);
  return inputs;
}

/**
 * The script's work: bundles `args`' entry into its out (both relative to the cwd); returns the
 * exit code, 0 when bundled, 2 for missing arguments (with a usage line), 1 with esbuild's message
 * when the entry does not compile.
 */
export async function runBundleTestScript(
  args: readonly string[],
  stderr: (text: string) => void,
): Promise<number> {
  const [entry, out] = args;
  if (entry === undefined || out === undefined) {
    stderr('usage: node bundle-test-script.js <entry.ts> <out.mjs>\n');
    return 2;
  }
  try {
    await bundleTestScript(resolve(entry), resolve(out));
    return 0;
  } catch (error) {
    stderr(`${(error as Error).message}\n`);
    return 1;
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await runBundleTestScript(process.argv.slice(2), (text) =>
    process.stderr.write(text),
  );
}
