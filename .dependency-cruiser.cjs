// The import rules of ../shared/ARCHITECTURE.md ("Layers", "Core and shell") and STYLE.md ("No
// import cycles"), checked by dependency-cruiser over every package's `src/` (tests included):
// `pnpm check:deps` (run by `bash scripts/dev.sh test`, after `pnpm lint`). See ADR 0046.
//
// Type-only imports count (`tsPreCompilationDeps: true`): a cycle of types fails like one of
// values, since it is the same tangle of design. Fix a cycle by moving what two files share to a
// third file, never by a dynamic import or a cast.
//
// `@loom/*` imports resolve through each package's `exports` map to its `dist/` (as a user's
// would), so run `pnpm build` first; the rule `loom-imports-resolve` says so when it was not.

/** Test code: it may reach what shipped code may not (`src/testing/**`, other backends). */
const testFile = '\\.(test|bench)\\.ts$|\\.test-support\\.ts$';

/** The packages in ARCHITECTURE.md's layer order, each with what it may import besides itself. */
const packageImports = {
  'event-runtime': [],
  scheduler: ['event-runtime'],
  middleware: ['event-runtime', 'scheduler'],
  'workflow-runtime': ['event-runtime', 'scheduler', 'middleware'],
  // render and reasoning use the kernel's shared vocabulary (its root door: LoomError, Clock,
  // JsonValue, FlowContext), never its runtime; reasoning's retry wraps middleware's, and render
  // reads reasoning's message types (`render-types-only` below).
  reasoning: ['event-runtime', 'middleware'],
  render: ['event-runtime', 'reasoning'],
  'agent-loop': [
    'event-runtime',
    'scheduler',
    'middleware',
    'workflow-runtime',
    'render',
    'reasoning',
  ],
  // view reads what the kernel and the agent loop write, encrypted logs included.
  view: [
    'event-runtime',
    'scheduler',
    'middleware',
    'workflow-runtime',
    'render',
    'reasoning',
    'agent-loop',
    'plugins/crypto',
    'plugins/content',
  ],
};

/**
 * Where a package of the lists above lives, resolved (`packages/x/`, `plugins/y/`) or not (its
 * name, when the importer does not depend on it: `loom-imports-resolve` reports that too).
 */
function home(name) {
  const [dir, scoped] = name.startsWith('plugins/')
    ? [name, `@loom/plugin-${name.slice('plugins/'.length)}`]
    : [`packages/${name}`, `@loom/${name}`];
  return `${dir}/|${scoped}(/|$)`;
}
const anyOf = (names) => `^(${names.map(home).join('|')})`;
/** Any workspace package, resolved or not. */
const workspace = '^((packages|plugins|tools)/|@loom/)';

const layerRules = Object.entries(packageImports).map(([name, allowed]) => ({
  name: `layers-${name}`,
  comment:
    `@loom/${name} imports only ${allowed.length === 0 ? 'itself' : allowed.join(', ')} ` +
    '(ARCHITECTURE.md "Layers": lower never imports higher; no package imports tools/)',
  severity: 'error',
  from: { path: `^packages/${name}/src/` },
  to: { path: workspace, pathNot: anyOf([name, ...allowed]) },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'An import cycle (type-only imports count). Move what the files share to a third file ' +
        '(STYLE.md "No import cycles"; ADR 0046).',
      severity: 'error',
      from: { path: '^(packages|plugins|tools)/[^/]+/src/' },
      to: { circular: true },
    },
    {
      name: 'core-is-pure',
      comment:
        'The execution core decides and never does: it imports only other core files and the ' +
        "kernel's shared vocabulary (envelope, errors, limits, the JSON codec, encoded payloads, " +
        'the well-formed text check); no clock, store, lease, node:* or shell file (ADR 0046 ' +
        'rules 2 and 3).',
      severity: 'error',
      from: { path: '^packages/event-runtime/src/runtime/core/', pathNot: testFile },
      to: {
        pathNot:
          '^packages/event-runtime/src/(runtime/core/|envelope\\.ts$|errors\\.ts$|limits\\.ts$|' +
          'internal/json-codec\\.ts$|internal/encoded-payloads\\.ts$|internal/well-formed-text\\.ts$)',
      },
    },
    {
      name: 'store-below-runtime',
      comment:
        'A store (and the store kit) never imports the kernel runtime: stores sit below it ' +
        '(ARCHITECTURE.md "Core and shell"; ADR 0046 rule 4).',
      severity: 'error',
      from: { path: '^packages/event-runtime/src/(store/|store-kit\\.ts$)' },
      to: { path: '^packages/event-runtime/src/runtime/' },
    },
    ...layerRules,
    {
      name: 'kernel-root-door',
      comment:
        'render and reasoning use only the kernel root door (@loom/event-runtime: its shared ' +
        'vocabulary), never /kernel, /sqlite, /postgres or /store-kit; their tests may.',
      severity: 'error',
      from: { path: '^packages/(render|reasoning)/src/', pathNot: testFile },
      to: {
        path: '^(packages/event-runtime/|@loom/event-runtime/)',
        pathNot: '^packages/event-runtime/dist/index\\.(d\\.ts|js)$',
      },
    },
    {
      name: 'render-types-only',
      comment: "render reads reasoning's types (messages, tool specs) and runs none of its code.",
      severity: 'error',
      from: { path: '^packages/render/src/' },
      to: { path: '^packages/reasoning/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'plugins-on-the-kernel',
      comment:
        "A plugin wraps the kernel's store interfaces and imports nothing above the kernel " +
        '(ARCHITECTURE.md "Plugins"); its tests may also drive it through workflow-runtime.',
      severity: 'error',
      from: { path: '^plugins/([^/]+)/src/', pathNot: testFile },
      to: {
        path: workspace,
        pathNot: `^(plugins/$1/|@loom/plugin-$1(/|$)|${home('event-runtime')})`,
      },
    },
    {
      name: 'plugin-tests-on-the-kernel',
      comment:
        "A plugin's tests import the kernel and workflow-runtime (flows over the plugin), nothing else.",
      severity: 'error',
      from: { path: `^plugins/([^/]+)/src/.*(${testFile})` },
      to: {
        path: workspace,
        pathNot: `^(plugins/$1/|@loom/plugin-$1(/|$)|${home('event-runtime')}|${home('workflow-runtime')})`,
      },
    },
    {
      name: 'testing-door',
      comment:
        'Only tests (and the tools, which test everything below them) import test doubles: ' +
        'src/testing/** of any package, or its /testing door. The doors themselves ' +
        '(src/testing.ts, src/testing-*.ts) and src/testing/** may.',
      severity: 'error',
      from: {
        path: '^(packages|plugins)/[^/]+/src/',
        pathNot: `${testFile}|^(packages|plugins)/[^/]+/src/(testing/|testing[a-z-]*\\.ts$)`,
      },
      to: { path: '^(packages|plugins)/[^/]+/(src/testing/|dist/testing)' },
    },
    {
      name: 'loom-imports-resolve',
      comment:
        'An @loom/* import did not resolve: run `pnpm build` first (they resolve to dist/ ' +
        'through the exports map), or the importer does not depend on that package in its ' +
        'package.json, or the subpath is not exported.',
      severity: 'error',
      from: {},
      to: { path: '^@loom/', couldNotResolve: true },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    // Other packages are leaves: their own src is cruised from its own folder.
    doNotFollow: { path: ['(^|/)node_modules/', '(^|/)dist/'] },
    exclude: { path: '(^|/)node_modules/' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['types', 'import', 'default'],
      extensions: ['.ts', '.d.ts', '.js', '.mjs'],
    },
    cache: false,
  },
};
