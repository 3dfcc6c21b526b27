// What every test that runs a Postgres server of its own needs (a throwaway cluster, a primary
// with a streaming standby, a pg_auto_failover formation): the server binaries, a free loopback
// port, and the ids of the `postgres` user (initdb refuses to run as root).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

/** The newest `/usr/lib/postgresql/<major>/bin` that has `tool`; throws naming what is missing. */
export function postgresBinDir(tool = 'initdb'): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => existsSync(join(root, name, 'bin', tool)))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const version = versions[0];
  if (version === undefined) {
    throw new Error(
      `no ${tool} under ${root}/*/bin: this test needs the PostgreSQL server binaries`,
    );
  }
  return join(root, version, 'bin');
}

/** A loopback port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The `postgres` user's uid and gid, for the folders its server owns. */
export function postgresUserIds(): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid, gid };
}
