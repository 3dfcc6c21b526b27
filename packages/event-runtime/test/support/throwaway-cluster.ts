// A Postgres cluster of a test's own (never the shared server on 5432): initdb as the postgres
// user into a temp dir, a free port, pg_ctl to start, stop and restart it. Fails loudly when it
// cannot be made: a restart test that silently skipped would prove nothing.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, postgresBinDir, postgresUserIds } from './postgres-server.js';

export interface ThrowawayCluster {
  readonly port: number;
  /** postgres://postgres@127.0.0.1:<port>/postgres (trust). */
  readonly url: string;
  /** Fast shutdown: every connection is terminated (57P01), the server is down until start(). */
  stop(): void;
  start(): void;
  /** Stops the server (immediately) and removes its directory. Idempotent. */
  destroy(): void;
}

/**
 * initdb (trust auth) and start it on a free port. fsync is off (a test cluster) unless
 * `fsync: true` (a benchmark that must pay for durable commits like a real server).
 */
export async function startThrowawayCluster(
  settings: { fsync?: boolean } = {},
): Promise<ThrowawayCluster> {
  const bin = postgresBinDir();
  const dir = mkdtempSync(join(tmpdir(), 'loom-pg-'));
  const data = join(dir, 'data');
  const { uid, gid } = postgresUserIds();
  chownSync(dir, uid, gid);
  chmodSync(dir, 0o700);
  const asPostgres = (tool: string, args: string[]) =>
    execFileSync('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args], {
      stdio: 'pipe',
      timeout: 60_000,
    });
  asPostgres('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=${settings.fsync === true ? 'on' : 'off'} -c max_connections=50`;
  let destroyed = false;
  const cluster: ThrowawayCluster = {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: () => {
      asPostgres('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
    },
    stop: () => {
      asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    },
    destroy: () => {
      if (destroyed) return;
      destroyed = true;
      try {
        asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // Already stopped.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    cluster.start();
  } catch (error) {
    cluster.destroy();
    throw error;
  }
  return cluster;
}
