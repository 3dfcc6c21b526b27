// A throwaway npm registry for the release check: verdaccio on 127.0.0.1 on a free port, its
// config, storage and user file in a directory the caller owns and removes. It has no uplink: it
// serves what was published to it and nothing else, so a `@loom/*` name we did not publish is a
// 404, never a same-named package from the public registry. Projects point only the `@loom`
// scope at it (`@loom:registry=` in their .npmrc) and get every other package from the
// registry the machine is set up with, through npm's and pnpm's own clients and their retries.
// (Proxying them through verdaccio failed a run: an uplink error other than a timeout or a
// reset becomes a 404, which no client retries.)
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { spawnTestCommand, type TestProcess } from '@loom/event-runtime/testing';

/** Longest verdaccio may take to answer its ping after it was spawned. */
const startWaitMs = 30_000;
/** Longest one HTTP call to it may take. */
const requestTimeoutMs = 10_000;
/** Tries with a fresh port when another process took the one picked (bind race). */
const startAttemptsMax = 3;
/** Verdaccio is SIGKILLed this long after its start if the test has not stopped it. */
const lifetimeMs = 600_000;

/** A running verdaccio and a user config (npmrc) that may publish to it. */
export interface LocalRegistry {
  /** `http://127.0.0.1:<port>/` */
  readonly url: string;
  /** Path of an npmrc holding this registry's auth token: give it as `npm_config_userconfig`. */
  readonly npmrc: string;
  /** Everything verdaccio printed so far (for failure messages). */
  output(): string;
  /** SIGKILLs verdaccio and awaits its exit. */
  stop(): Promise<void>;
}

function configYaml(dir: string): string {
  return `storage: ${join(dir, 'storage')}
auth:
  htpasswd:
    file: ${join(dir, 'htpasswd')}
    # the one user the check registers to publish with
    max_users: 1
    # a throwaway password: sha1, not bcrypt's ~350 ms of CPU
    algorithm: sha1
# JWT tokens are checked by their signature; the legacy ones re-verify the password on every
# request, which serialised the publishes behind verdaccio's one thread (7 s for 5 at once).
security:
  api:
    jwt:
      sign:
        expiresIn: 1h
packages:
  '@loom/*':
    access: $all
    publish: $authenticated
  # no uplink: only what was published here is served
  '**':
    access: $all
    publish: nobody
web:
  enable: false
log: { type: stdout, format: pretty, level: warn }
`;
}

/** A port nothing listened on a moment ago (the OS's pick for port 0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error(`no port from ${String(address)}`));
      });
    });
  });
}

async function answersPing(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}-/ping`, { signal: AbortSignal.timeout(2_000) });
    return response.ok;
  } catch {
    return false;
  }
}

/** Resolves once verdaccio answers its ping; false if it exited first (a taken port). */
async function started(registry: TestProcess, url: string): Promise<boolean> {
  const deadline = Date.now() + startWaitMs;
  while (Date.now() < deadline) {
    if (registry.exited()) return false;
    if (await answersPing(url)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(
    `verdaccio did not answer ${url}-/ping within ${startWaitMs} ms; output so far:\n${registry.output()}`,
  );
}

/** Registers the publishing user (`npm adduser` does the same call) and returns its token. */
async function addUser(url: string): Promise<string> {
  const response = await fetch(`${url}-/user/org.couchdb.user:loom-release`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'loom-release', password: 'loom-release-check' }),
    signal: AbortSignal.timeout(requestTimeoutMs),
  });
  const body = (await response.json()) as { token?: unknown };
  if (!response.ok || typeof body.token !== 'string') {
    throw new Error(`verdaccio refused the user (${response.status}): ${JSON.stringify(body)}`);
  }
  return body.token;
}

/**
 * Starts verdaccio with its files in `dir` (config.yaml, storage/, htpasswd, npmrc) and registers
 * a user that may publish `@loom/*`.
 */
export async function startLocalRegistry(dir: string): Promise<LocalRegistry> {
  const bin = createRequire(import.meta.url).resolve('verdaccio/bin/verdaccio');
  const config = join(dir, 'config.yaml');
  writeFileSync(config, configYaml(dir));
  let lastOutput = '';
  for (let attempt = 1; attempt <= startAttemptsMax; attempt += 1) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/`;
    const registry = spawnTestCommand(process.execPath, {
      name: 'verdaccio',
      args: [bin, '--config', config, '--listen', `127.0.0.1:${port}`],
      deadlineMs: lifetimeMs,
    });
    if (!(await started(registry, url))) {
      lastOutput = registry.output();
      continue;
    }
    const npmrc = join(dir, 'npmrc');
    writeFileSync(npmrc, `//127.0.0.1:${port}/:_authToken=${await addUser(url)}\n`);
    return {
      url,
      npmrc,
      output: () => registry.output(),
      stop: async () => {
        await registry.kill('SIGKILL');
      },
    };
  }
  throw new Error(
    `verdaccio exited before answering, ${startAttemptsMax} times; its last output:\n${lastOutput}`,
  );
}
