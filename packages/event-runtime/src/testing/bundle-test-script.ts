// Run as a script (`node bundle-test-script.js <entry> <out>`): bundles a TypeScript test script
// and every TypeScript file it imports into one ES module at <out>, packages left as imports (they
// resolve from <out>'s folder, inside the script's package), and writes <out>.inputs.json: the
// bundled files with their sizes and modification times, so a later spawn can tell whether <out>
// is still current without bundling again. `import.meta.url`, `.dirname` and `.filename` in a
// bundled file become that file's own values, so a script still finds its neighbours. The
// harness (test-script-bundle.ts) runs this in a child process because esbuild's synchronous API
// takes no plugins and spawning stays synchronous.
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

const [entry, out] = process.argv.slice(2);
if (entry === undefined || out === undefined) {
  process.stderr.write('usage: node bundle-test-script.js <entry.ts> <out.mjs>\n');
  process.exit(2);
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

const result = await build({
  entryPoints: [entry],
  bundle: true,
  packages: 'external',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  write: false,
  metafile: true,
  logLevel: 'silent',
  plugins: [ownImportMeta],
}).catch((error: Error) => {
  // esbuild's message lists each error with its file and line: that, not a stack.
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
const inputs = Object.keys(result.metafile.inputs).map((input) => {
  const path = isAbsolute(input) ? input : resolve(input);
  const stat = statSync(path);
  return { path, size: stat.size, mtimeMs: stat.mtimeMs };
});
const code = result.outputFiles[0]?.contents;
if (code === undefined) throw new Error(`esbuild wrote nothing for ${entry}`);
// Another test process may bundle the same script at once: each writes its own file and renames
// it into place, so a reader sees a whole bundle or none.
mkdirSync(dirname(out), { recursive: true });
const temporary = `${out}.${process.pid}.tmp`;
writeFileSync(temporary, code);
writeFileSync(`${temporary}.inputs`, JSON.stringify(inputs));
renameSync(temporary, out);
renameSync(`${temporary}.inputs`, `${out}.inputs.json`);
