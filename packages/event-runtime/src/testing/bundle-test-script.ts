// Bundles a TypeScript test script and every TypeScript file it imports into one ES module, for
// test-script-bundle.ts, which runs this file as a script (`node bundle-test-script.js <entry>
// <out>`): esbuild's synchronous API takes no plugins, and spawning a test process stays
// synchronous. Packages are left as imports (they resolve from <out>'s folder, inside the
// script's package). <out>.inputs.json lists the bundled files with their sizes and modification
// times, so a later spawn can tell whether <out> is still current without bundling again.
// `import.meta.url`, `.dirname` and `.filename` in a bundled file become that file's own values,
// so a script still finds its neighbours.
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
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
    esbuild.onLoad({ filter: /\.[cm]?tsx?$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const contents = source
        .replaceAll('import.meta.dirname', JSON.stringify(dirname(args.path)))
        .replaceAll('import.meta.filename', JSON.stringify(args.path))
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href));
      return { contents, loader: args.path.endsWith('x') ? 'tsx' : 'ts' };
    });
  },
};

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
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    metafile: true,
    logLevel: 'silent',
    plugins: [ownImportMeta],
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
