// Every ```ts code block in the docs type-checks against today's code (issue 10). Run by
// `pnpm check:docs` and `bash scripts/dev.sh test` (after the build: the blocks import the
// workspace packages from their built dist).
//
//   node scripts/check-doc-blocks.mjs            README.md, docs/**/*.md, packages/*/README.md,
//                                                tools/*/README.md, plugins/*/README.md, and
//                                                every README.md under a package's src/
//   node scripts/check-doc-blocks.mjs a.md b.md  only these files
//
// The conventions (documented in docs/README.md):
// - Blocks fenced ```ts or ```typescript are checked; every other language is not.
// - ```ts nocheck: <reason> opts a block out; the reason is required and printed.
// - <!-- prelude: ... --> right before a block (blank lines between allowed) is code the
//   checker puts in front of the block and the reader does not see: the declarations a
//   fragment assumes (`declare const ctx: FlowContext;`, imports).
// Each block is its own ES module (top-level await works), compiled with tsconfig.base.json's
// options (strict, NodeNext) in one TypeScript program. An error prints as `file.md:line: message`
// with the line in the markdown file (a prelude's errors point at the comment).
import {
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
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(import.meta.dirname, '..');
const workspaceGroups = ['packages', 'tools', 'plugins'];
const checkedLanguages = new Set(['ts', 'typescript']);

/** The markdown files checked by default, relative to the repository root. */
function defaultFiles() {
  const files = ['README.md'];
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  walk('docs');
  // A README beside the code it describes (a store's, say) under a package's src/.
  const readmesUnder = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) readmesUnder(path);
      else if (entry.name === 'README.md') files.push(path);
    }
  };
  for (const group of workspaceGroups) {
    for (const dir of readdirSync(join(root, group)).sort()) {
      const readme = join(group, dir, 'README.md');
      if (existsSync(join(root, readme))) files.push(readme);
      if (existsSync(join(root, group, dir, 'src'))) readmesUnder(join(group, dir, 'src'));
    }
  }
  return files;
}

/**
 * The fenced code blocks of one markdown file: language, info string after it, the 1-based
 * line of the opening fence, the block's lines (the fence's indentation removed) and the
 * prelude comment before it, if any.
 */
export function extractBlocks(text) {
  const lines = text.split(/\r?\n/);
  const blocks = [];
  let open = null;
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index];
    if (open === null) {
      const fence = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)\s*(.*)$/.exec(line);
      if (fence === null) continue;
      open = {
        indent: fence[1].length,
        marker: fence[2],
        language: fence[3].toLowerCase(),
        info: fence[4].trim(),
        line: index + 1,
        lines: [],
        prelude: preludeBefore(lines, index),
      };
      continue;
    }
    const close = /^\s*(`{3,}|~{3,})\s*$/.exec(line);
    if (close !== null && close[1][0] === open.marker[0] && close[1].length >= open.marker.length) {
      blocks.push(open);
      open = null;
      continue;
    }
    const indent = /^\s*/.exec(line)[0].length;
    open.lines.push(line.slice(Math.min(indent, open.indent)));
  }
  return blocks;
}

/** `<!-- prelude: ... -->` ending on the last non-blank line before line `fenceIndex`. */
function preludeBefore(lines, fenceIndex) {
  let end = fenceIndex - 1;
  while (end >= 0 && lines[end].trim() === '') end -= 1;
  if (end < 0 || !lines[end].trimEnd().endsWith('-->')) return null;
  let start = end;
  while (start >= 0 && !lines[start].includes('<!--')) start -= 1;
  if (start < 0) return null;
  const comment = lines
    .slice(start, end + 1)
    .join('\n')
    .replace(/^[\s\S]*?<!--/, '')
    .replace(/-->\s*$/, '');
  const match = /^\s*prelude:([\s\S]*)$/.exec(comment);
  if (match === null) return null;
  return { line: start + 1, code: match[1] };
}

/**
 * A temporary project whose node_modules holds every workspace package (by name, linked to its
 * directory, so imports resolve through its exports map to the built dist) and every
 * dependency a workspace package installed (so a doc can import zod or @opentelemetry/api).
 */
function makeProject() {
  const dir = mkdtempSync(join(tmpdir(), 'loom-doc-blocks-'));
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  const modules = join(dir, 'node_modules');
  const linked = new Set();
  const link = (name, target) => {
    if (linked.has(name)) return;
    linked.add(name);
    const path = join(modules, name);
    mkdirSync(dirname(path), { recursive: true });
    symlinkSync(target, path, 'dir');
  };
  const missingDist = [];
  const workspaces = [];
  for (const group of workspaceGroups) {
    for (const name of readdirSync(join(root, group)).sort()) {
      const manifestPath = join(root, group, name, 'package.json');
      if (!existsSync(manifestPath)) continue; // a planned package: README only
      workspaces.push(join(root, group, name));
      const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
      link(manifest.name, join(root, group, name));
      if (manifest.exports !== undefined && !existsSync(join(root, group, name, 'dist'))) {
        missingDist.push(manifest.name);
      }
    }
  }
  for (const workspace of workspaces) {
    const installed = join(workspace, 'node_modules');
    if (!existsSync(installed)) continue;
    for (const entry of readdirSync(installed)) {
      if (entry.startsWith('.')) continue;
      if (entry.startsWith('@')) {
        for (const scoped of readdirSync(join(installed, entry))) {
          link(`${entry}/${scoped}`, join(installed, entry, scoped));
        }
      } else {
        link(entry, join(installed, entry));
      }
    }
  }
  return { dir, missingDist };
}

function compilerOptions(dir) {
  const base = ts.readConfigFile(join(root, 'tsconfig.base.json'), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(
    { compilerOptions: base.config.compilerOptions },
    ts.sys,
    dir,
  );
  return {
    ...parsed.options,
    noEmit: true,
    composite: false,
    declaration: false,
    declarationMap: false,
    sourceMap: false,
    incremental: false,
    typeRoots: [join(root, 'node_modules', '@types')],
  };
}

/**
 * Checks the code blocks of `files` (paths relative to the repository root or absolute).
 * Returns the counts and the report lines; `errors` is the number of failures.
 */
export function checkDocBlocks(files) {
  const started = performance.now();
  const report = [];
  // Problems at a markdown line, sorted by file then line before they are reported.
  const located = [];
  const optOuts = [];
  const sources = [];
  let errors = 0;
  let fileCount = 0;
  for (const [fileIndex, file] of files.entries()) {
    const path = resolve(root, file);
    const shown = path.startsWith(`${root}/`) ? relative(root, path) : path;
    const blocks = extractBlocks(readFileSync(path, 'utf8'));
    let counted = false;
    for (const block of blocks) {
      if (!checkedLanguages.has(block.language)) continue;
      if (!counted) fileCount += 1;
      counted = true;
      const nocheck = /^nocheck\b[\s:—-]*(.*)$/.exec(block.info);
      if (nocheck !== null) {
        if (nocheck[1].trim() === '') {
          located.push({
            order: [fileIndex, block.line, 0],
            text: `${shown}:${block.line}: 'nocheck' needs a reason: \`\`\`ts nocheck: <why>`,
          });
          errors += 1;
        } else {
          optOuts.push(`${shown}:${block.line}: not checked (nocheck): ${nocheck[1].trim()}`);
        }
        continue;
      }
      const prelude = block.prelude === null ? [] : block.prelude.code.split('\n');
      sources.push({
        fileIndex,
        shown,
        block,
        preludeLength: prelude.length,
        text: [...prelude, ...block.lines, 'export {};', ''].join('\n'),
      });
    }
  }
  const { dir, missingDist } = makeProject();
  try {
    if (missingDist.length > 0) {
      report.push(`not built: ${missingDist.join(', ')}; run \`pnpm build\` first`);
      errors += 1;
    }
    const byPath = new Map();
    sources.forEach((source, index) => {
      const name = source.shown.replace(/[^A-Za-z0-9]+/g, '-');
      const path = join(dir, `${String(index).padStart(3, '0')}-${name}-${source.block.line}.ts`);
      writeFileSync(path, source.text);
      byPath.set(path, source);
    });
    const program = ts.createProgram([...byPath.keys()], compilerOptions(dir));
    const diagnostics = [
      ...program.getOptionsDiagnostics(),
      ...program.getGlobalDiagnostics(),
      ...program.getSyntacticDiagnostics(),
      ...program.getSemanticDiagnostics(),
    ];
    for (const diagnostic of diagnostics) {
      errors += 1;
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n    ');
      const source = diagnostic.file ? byPath.get(resolve(diagnostic.file.fileName)) : undefined;
      if (source === undefined || diagnostic.start === undefined) {
        const where = diagnostic.file ? `${diagnostic.file.fileName}: ` : '';
        report.push(`${where}TS${diagnostic.code}: ${message}`);
        continue;
      }
      const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
      const markdownLine =
        line < source.preludeLength
          ? `${source.block.prelude.line} (prelude)`
          : String(source.block.line + 1 + line - source.preludeLength);
      located.push({
        order: [source.fileIndex, source.block.line + line, diagnostic.start],
        text: `${source.shown}:${markdownLine}: TS${diagnostic.code}: ${message}`,
      });
    }
    located.sort(
      (a, b) => a.order[0] - b.order[0] || a.order[1] - b.order[1] || a.order[2] - b.order[2],
    );
    report.push(...located.map((entry) => entry.text));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    files: fileCount,
    checked: sources.length,
    optedOut: optOuts.length,
    errors,
    lines: [...optOuts, ...report],
    ms: Math.round(performance.now() - started),
  };
}

if (process.argv[1] === import.meta.filename) {
  const args = process.argv.slice(2);
  const files = args.length > 0 ? args.map((arg) => resolve(arg)) : defaultFiles();
  const result = checkDocBlocks(files);
  for (const line of result.lines) console.log(line);
  console.log(
    `check-doc-blocks: ${result.checked} blocks checked, ${result.optedOut} opted out, ` +
      `in ${result.files} files; ${result.errors} errors (${result.ms} ms)`,
  );
  process.exitCode = result.errors === 0 ? 0 : 1;
}
