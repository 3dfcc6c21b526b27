// What every test that runs a Postgres server of its own needs (a throwaway cluster, a primary
// with a streaming standby, a pg_auto_failover formation): the server binaries, a free loopback
// port, and the ids of the `postgres` user (initdb refuses to run as root).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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

/** The first port the OS hands out as an outgoing connection's local port (Linux's default if unreadable). */
function ephemeralLow(): number {
  try {
    const low = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0],
    );
    if (Number.isInteger(low)) return low;
  } catch {
    // Not Linux, or no /proc: the usual range.
  }
  return 32_768;
}

/** The lowest port a test server is given: above the registered services most machines run. */
const serverPortLow = 10_000;

/** Ports this process handed out: never twice (a server may restart on its port). */
const handedOut = new Set<number>();

async function canListen(port: number): Promise<boolean> {
  const server = createServer();
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (listening) await new Promise((resolve) => server.close(resolve));
  return listening;
}

/**
 * A loopback port for a server the test starts later (a throwaway cluster, a failover node), free
 * now and kept free: **below the ephemeral range**, which the OS draws the local port of every
 * outgoing connection from. A port taken with `listen(0)` was an ephemeral one, and any of the
 * suite's thousands of client connections could take it as its local port in the seconds before
 * the server bound it: Postgres then fails with EADDRINUSE (a connected socket blocks a listener
 * on its port, SO_REUSEADDR or not). The likeliest cause of a failover cluster whose bring-up
 * outlasted its test's 60 s in a clean-clone CI run (2026-12-07). Below that range only other
 * servers compete, and a port is drawn at random from some 22,000: two test processes drawing the
 * same one in the same seconds is the remaining, far smaller, chance.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  const high = low - 1;
  if (high - serverPortLow < 1_000) {
    throw new Error(
      `the ephemeral port range starts at ${low}: too low to give test servers a port below it`,
    );
  }
  for (let tries = 0; tries < 200; tries++) {
    const port = serverPortLow + Math.floor(Math.random() * (high - serverPortLow + 1));
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free loopback port in ${serverPortLow}..${high} after 200 tries`);
}

/** The `postgres` user's uid and gid, for the folders its server owns. */
export function postgresUserIds(): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid, gid };
}
