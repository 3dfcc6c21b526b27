import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type BundleInput, bundleTestScript, runBundleTestScript } from './bundle-test-script.js';
import { killTestProcesses, spawnTestCommand, spawnTestProcess } from './test-process.js';
import { bundledTestScript, testScriptArgs } from './test-script-bundle.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-test-process-'));
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

/** A plain node script (no tsx: these tests are about the harness, not about the script). */
function script(name: string, source: string): string {
  const file = join(directory, `${name}.mjs`);
  writeFileSync(file, source);
  return file;
}

const node = (file: string, options: { deadlineMs?: number; waitMs?: number } = {}) =>
  spawnTestCommand(process.execPath, { args: [file], name: 'the script', ...options });

describe('the test-process harness', () => {
  it('a line is awaited whole: a piece still growing does not count', async () => {
    const file = script(
      'growing',
      "process.stdout.write('read'); setTimeout(() => process.stdout.write('y now\\nready 2\\n'), 200);",
    );
    const child = node(file);
    expect(await child.line('ready')).toBe('ready now');
    expect(await child.match(/^ready (\d)$/)).toMatchObject({ 1: '2' });
    expect((await child.ended()).code).toBe(0);
  });

  it('every line printed before the exit is seen; a line never printed fails naming it', async () => {
    const file = script('brief', "console.log('one'); console.error('oops'); console.log('two');");
    const child = node(file);
    await expect(child.line('three')).rejects.toThrow(
      /the script \(pid \d+\) exited \(code 0\) before printing 'three'; output so far:\n[\s\S]*two/,
    );
    expect(await child.line('two')).toBe('two');
    expect(child.stderr()).toBe('oops\n');
  });

  it('a wait past its deadline fails naming what it waited for, with the output so far', async () => {
    const child = node(
      script('quiet', 'console.log(\'{"fact":"hello"}\'); setInterval(() => {}, 1000);'),
    );
    // Started and printing first: a slow start on a loaded box is not what this test is about.
    await child.fact('hello');
    await expect(child.fact('done', 300)).rejects.toThrow(
      /timed out after 300 ms waiting for the fact 'done'; output so far:\n\{"fact":"hello"\}/,
    );
    expect(await child.kill()).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('a process alive at its deadline is SIGKILLed, and its waits say so', async () => {
    const child = node(script('stuck', 'setInterval(() => {}, 1000);'), { deadlineMs: 300 });
    await expect(child.line('never', 10_000)).rejects.toThrow(
      /exited \(SIGKILLed at its 300 ms deadline\) before printing 'never'/,
    );
    expect(await child.exit).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('JSON facts are read from whole lines; a line that is not JSON is named', async () => {
    // One write: the fact and the line after it arrive together, and the wait still finds the
    // fact (what came after it is not the wait's business; under load, two writes merge too).
    const child = node(
      script('facts', "process.stdout.write(JSON.stringify({ fact: 'a', n: 1 }) + '\\nnope\\n');"),
    );
    expect(await child.fact('a')).toEqual({ fact: 'a', n: 1 });
    await child.exit;
    expect(() => child.facts()).toThrow(/printed a line that is not JSON: nope/);
  });

  it('a line that is not JSON before the awaited fact fails the wait, naming the line', async () => {
    const child = node(
      script('facts-late', "console.log('nope'); console.log(JSON.stringify({ fact: 'a' }));"),
    );
    await expect(child.fact('a')).rejects.toThrow(/printed a line that is not JSON: nope/);
    await child.exit;
  });

  it('a command that cannot be spawned ends at once, and its waits say it failed to spawn', async () => {
    const child = spawnTestCommand(join(directory, 'no-such-program'), { name: 'ghost' });
    await expect(child.line('ready')).rejects.toThrow(/ghost .*failed to spawn: spawn .*ENOENT/s);
    expect(await child.kill()).toEqual({ code: null, signal: null });
    expect(child.exited()).toBe(true);
  });

  it('the environment: inherited unless told not to, a variable set to undefined is removed, stdin piped on request', async () => {
    process.env.LOOM_TEST_PROCESS_INHERITED = 'yes';
    try {
      const printEnv = script(
        'env',
        [
          'const seen = { inherited: process.env.LOOM_TEST_PROCESS_INHERITED ?? null, own: process.env.OWN ?? null };',
          "let input = ''; process.stdin.on('data', (chunk) => { input += chunk; });",
          "process.stdin.on('end', () => console.log(JSON.stringify({ ...seen, input })));",
        ].join('\n'),
      );
      const piped = spawnTestCommand(process.execPath, {
        args: [printEnv],
        env: { OWN: 'mine' },
        stdin: true,
      });
      piped.child.stdin?.end('hello');
      expect(JSON.parse(await piped.line('{'))).toEqual({
        inherited: 'yes',
        own: 'mine',
        input: 'hello',
      });
      const removed = spawnTestCommand(process.execPath, {
        args: [printEnv],
        env: { LOOM_TEST_PROCESS_INHERITED: undefined },
        stdin: true,
      });
      removed.child.stdin?.end();
      expect(JSON.parse(await removed.line('{'))).toMatchObject({ inherited: null });
      const bare = spawnTestCommand(process.execPath, {
        args: [printEnv],
        inheritEnv: false,
        env: { OWN: 'only' },
        stdin: true,
      });
      bare.child.stdin?.end();
      expect(JSON.parse(await bare.line('{'))).toMatchObject({ inherited: null, own: 'only' });
    } finally {
      delete process.env.LOOM_TEST_PROCESS_INHERITED;
    }
  });

  it('nodeArgs run the script with node arguments of its own, not as a bundle', async () => {
    const file = script('args', 'console.log(JSON.stringify(process.execArgv));');
    const child = spawnTestProcess(file, { nodeArgs: ['--no-warnings'] });
    expect(JSON.parse(await child.line('['))).toEqual(['--no-warnings']);
  });

  it('killTestProcesses takes down every process still running', async () => {
    const children = [1, 2].map(() => node(script('idle', 'setInterval(() => {}, 1000);')));
    await killTestProcesses();
    for (const child of children) {
      expect(child.exited()).toBe(true);
      expect((await child.exit).signal).toBe('SIGKILL');
    }
  });
});

describe('TypeScript scripts run as their bundle', () => {
  // A package of its own in the temporary folder: the bundle goes to its .test-scripts folder.
  const home = join(directory, 'pkg');
  mkdirSync(join(home, 'lib'), { recursive: true });
  writeFileSync(join(home, 'package.json'), '{ "type": "module" }');
  const main = join(home, 'main.ts');
  writeFileSync(
    main,
    [
      "import { value, where } from './lib/where.js';",
      'const self: string = import.meta.filename;',
      'console.log(JSON.stringify({ script: process.argv[1], self, where, value }));',
    ].join('\n'),
  );
  const library = (value: number) =>
    writeFileSync(
      join(home, 'lib', 'where.ts'),
      `export const where: string = import.meta.dirname;\nexport const value: number = ${value};\n`,
    );
  const run = async () => {
    const child = spawnTestProcess(main);
    const ran = JSON.parse(await child.line('{')) as Record<string, unknown>;
    expect((await child.ended()).code).toBe(0);
    return ran;
  };

  it('a script and the TypeScript it imports run without a loader, each seeing its own import.meta', async () => {
    library(1);
    const ran = await run();
    expect(ran.script).toMatch(/pkg\/\.test-scripts\/main-\w+\.mjs$/);
    expect(ran).toMatchObject({ self: main, where: join(home, 'lib'), value: 1 });
  });

  it('a change to an imported file is bundled again before the next spawn', async () => {
    library(1);
    expect((await run()).value).toBe(1);
    library(22);
    expect((await run()).value).toBe(22);
  });

  it('bundleTestScript lists every file it bundled, and a second bundle replaces the first whole', async () => {
    library(5);
    const out = join(home, 'out', 'main.mjs');
    const inputs = await bundleTestScript(main, out);
    expect(inputs.map((input) => input.path).sort()).toEqual([join(home, 'lib', 'where.ts'), main]);
    library(6);
    await bundleTestScript(main, out);
    const ran = spawnTestCommand(process.execPath, { args: [out] });
    expect(JSON.parse(await ran.line('{'))).toMatchObject({ script: out, value: 6 });
    await expect(bundleTestScript(join(home, 'missing.ts'), out)).rejects.toThrow(/missing\.ts/);
  });

  it('a script named relative to the cwd it is spawned in is found there', async () => {
    library(4);
    const child = spawnTestProcess('main.ts', { cwd: home });
    expect(JSON.parse(await child.line('{'))).toMatchObject({ self: main, value: 4 });
    expect((await child.ended()).code).toBe(0);
  });

  it('LOOM_TEST_SCRIPTS=tsx runs the script itself under tsx', async () => {
    library(3);
    process.env.LOOM_TEST_SCRIPTS = 'tsx';
    try {
      expect(await run()).toMatchObject({ script: main, value: 3 });
    } finally {
      delete process.env.LOOM_TEST_SCRIPTS;
    }
  });

  it('a bundle is built again when it is gone, when its list of inputs is unreadable, or when an input vanished', () => {
    library(7);
    const out = bundledTestScript(main);
    if (out === undefined) throw new Error('expected a bundle');
    const inputsFile = `${out}.inputs.json`;
    const builtAt = () => statSync(out).mtimeMs;
    const inputs = () => JSON.parse(readFileSync(inputsFile, 'utf8')) as BundleInput[];
    // Current: the same file, not bundled again.
    const first = builtAt();
    expect(bundledTestScript(main)).toBe(out);
    expect(builtAt()).toBe(first);

    rmSync(out);
    expect(bundledTestScript(main)).toBe(out);
    expect(existsSync(out)).toBe(true);

    writeFileSync(inputsFile, 'not json');
    bundledTestScript(main);
    expect(inputs().map((input) => input.path)).toContain(main);

    const vanished = join(home, 'lib', 'vanished.ts');
    writeFileSync(
      inputsFile,
      JSON.stringify([{ path: vanished, size: 1, mtimeMs: 1 }, ...inputs()]),
    );
    bundledTestScript(main);
    expect(inputs().map((input) => input.path)).not.toContain(vanished);
  });

  it('a file that is not TypeScript, or outside any package, runs as it is', () => {
    const plain = join(home, 'plain.mjs');
    writeFileSync(plain, "console.log('plain');\n");
    expect(bundledTestScript(plain)).toBeUndefined();
    expect(testScriptArgs(plain)).toEqual(['--import', 'tsx', plain]);
    // The temporary folder's own root holds no package.json: no package to put a bundle in.
    const loose = join(directory, 'loose.ts');
    writeFileSync(loose, "console.log('loose');\n");
    expect(bundledTestScript(loose)).toBeUndefined();
    expect(testScriptArgs(main)).toEqual([bundledTestScript(main)]);
  });

  it("the bundler script: usage without its two arguments, esbuild's message when the entry fails", async () => {
    const written: string[] = [];
    const stderr = (text: string) => {
      written.push(text);
    };
    expect(await runBundleTestScript([main], stderr)).toBe(2);
    expect(written.join('')).toMatch(/^usage: node bundle-test-script\.js <entry\.ts> <out\.mjs>/);
    written.length = 0;
    const out = join(home, 'out', 'script.mjs');
    expect(await runBundleTestScript([join(home, 'missing.ts'), out], stderr)).toBe(1);
    expect(written.join('')).toMatch(/missing\.ts/);
    library(8);
    expect(await runBundleTestScript([main, out], stderr)).toBe(0);
    const ran = spawnTestCommand(process.execPath, { args: [out] });
    expect(JSON.parse(await ran.line('{'))).toMatchObject({ value: 8 });
  });

  it("a workspace package (@loom/*) is bundled in with its own import.meta; a package it imports resolves from where it lives, not from the script's package", async () => {
    // @loom/fake-lib, installed in the script's package, imports only-beside-lib, which only
    // fake-lib's own node_modules holds (as pnpm lays out a package's dependencies).
    const lib = join(home, 'node_modules', '@loom', 'fake-lib');
    const beside = join(lib, 'node_modules', 'only-beside-lib');
    mkdirSync(beside, { recursive: true });
    writeFileSync(
      join(lib, 'package.json'),
      '{ "name": "@loom/fake-lib", "type": "module", "main": "index.js" }',
    );
    writeFileSync(
      join(lib, 'index.js'),
      "import { answer } from 'only-beside-lib';\nexport const libDir = import.meta.dirname;\nexport const fromBeside = answer;\n",
    );
    writeFileSync(
      join(beside, 'package.json'),
      '{ "name": "only-beside-lib", "type": "module", "main": "index.js" }',
    );
    writeFileSync(join(beside, 'index.js'), 'export const answer = 42;\n');
    const script = join(home, 'uses-lib.ts');
    writeFileSync(
      script,
      "import { fromBeside, libDir } from '@loom/fake-lib';\nconsole.log(JSON.stringify({ libDir, fromBeside }));\n",
    );
    const child = spawnTestProcess(script);
    expect(JSON.parse(await child.line('{'))).toEqual({ libDir: lib, fromBeside: 42 });
    expect((await child.ended()).code).toBe(0);
    const out = bundledTestScript(script) as string;
    const inputs = JSON.parse(readFileSync(`${out}.inputs.json`, 'utf8')) as BundleInput[];
    expect(inputs.map((input) => input.path)).toContain(join(lib, 'index.js'));
    const bundle = readFileSync(out, 'utf8');
    expect(bundle).not.toContain("'@loom/fake-lib'");
    expect(bundle).not.toContain('"@loom/fake-lib"');
    expect(bundle).toContain(JSON.stringify(join(beside, 'index.js')));
  });

  it('a script that does not compile is an error naming it, before anything is spawned', () => {
    const broken = join(home, 'broken.ts');
    writeFileSync(broken, 'const x: number = ;\n');
    expect(() => spawnTestProcess(broken)).toThrow(
      /could not bundle the test script .*broken\.ts: .*broken\.ts:1:\d+: ERROR: Unexpected ";"/s,
    );
  });
});
