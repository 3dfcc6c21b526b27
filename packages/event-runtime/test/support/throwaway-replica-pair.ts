// A primary and a synchronous streaming standby of a test's own (never the shared server on
// 5432): initdb as the postgres user, pg_basebackup -R for the standby, both on free loopback
// ports. `killPrimary` SIGKILLs the primary's postmaster and every backend of it (a lost
// machine, not a shutdown), `promoteStandby` is what a failover manager does next. Fails loudly
// when the pair cannot be made: a failover test that silently skipped would prove nothing.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, postgresBinDir, postgresUserIds } from './postgres-server.js';

export interface ReplicaPair {
  readonly primaryPort: number;
  readonly standbyPort: number;
  /** postgres://postgres@127.0.0.1:<port>/postgres of one server (trust). */
  url(port: number): string;
  /** SIGKILL of the primary's postmaster and its children; resolves once its port refuses. */
  killPrimary(): void;
  /** pg_ctl promote -w: the standby becomes a read-write primary. */
  promoteStandby(): void;
  /** Stops both servers (immediately) and removes their directories. Idempotent. */
  destroy(): void;
}

/** Children of `pid` (its backends), from /proc. */
function childrenOf(pid: number): number[] {
  const out = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { stdio: 'pipe' })
    .toString()
    .split('\n')
    .map((line) => Number(line.trim()))
    .filter((child) => Number.isSafeInteger(child) && child > 0);
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts the primary, takes a base backup for the standby (-R writes its primary_conninfo),
 * starts the standby and makes it synchronous (`synchronous_standby_names = '*'`): a commit the
 * primary acknowledged is on the standby, as with a failover manager's synchronous standby.
 */
export async function startReplicaPair(): Promise<ReplicaPair> {
  const bin = postgresBinDir('pg_basebackup');
  const dir = mkdtempSync(join(tmpdir(), 'loom-pg-pair-'));
  const { uid, gid } = postgresUserIds();
  chownSync(dir, uid, gid);
  chmodSync(dir, 0o700);
  const asPostgres = (tool: string, args: string[]) =>
    execFileSync('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args], {
      stdio: 'pipe',
      timeout: 60_000,
    });
  const primaryData = join(dir, 'primary');
  const standbyData = join(dir, 'standby');
  const primaryPort = await freePort();
  const standbyPort = await freePort();
  const options = (port: number) =>
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60 ` +
    '-c wal_level=replica -c max_wal_senders=4 -c wal_sender_timeout=5s ' +
    '-c wal_receiver_status_interval=1s -c hot_standby=on';
  const start = (data: string, port: number, log: string) =>
    asPostgres('pg_ctl', ['-D', data, '-o', options(port), '-l', join(dir, log), '-w', 'start']);
  const stopNow = (data: string) => {
    try {
      asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // Not running (killed, or never started).
    }
  };
  let destroyed = false;
  const pair: ReplicaPair = {
    primaryPort,
    standbyPort,
    url: (port) => `postgres://postgres@127.0.0.1:${port}/postgres`,
    killPrimary: () => {
      const pid = Number(readFileSync(join(primaryData, 'postmaster.pid'), 'utf8').split('\n')[0]);
      const victims = [pid, ...childrenOf(pid)];
      for (const victim of victims) {
        try {
          process.kill(victim, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
      const deadline = Date.now() + 10_000;
      while (victims.some(alive)) {
        if (Date.now() > deadline) throw new Error(`primary processes ${victims} outlived SIGKILL`);
        execFileSync('sleep', ['0.02']);
      }
    },
    promoteStandby: () => {
      asPostgres('pg_ctl', ['-D', standbyData, '-w', '-t', '30', 'promote']);
    },
    destroy: () => {
      if (destroyed) return;
      destroyed = true;
      stopNow(standbyData);
      stopNow(primaryData);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    asPostgres('initdb', [
      '-D',
      primaryData,
      '-A',
      'trust',
      '-U',
      'postgres',
      '--no-sync',
      '-E',
      'UTF8',
    ]);
    start(primaryData, primaryPort, 'primary.log');
    asPostgres('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primaryPort),
      '-U',
      'postgres',
      '-D',
      standbyData,
      '-R',
      '-X',
      'stream',
      '--no-sync',
    ]);
    start(standbyData, standbyPort, 'standby.log');
    const psql = (port: number, sql: string) =>
      execFileSync(
        join(bin, 'psql'),
        [
          '-h',
          '127.0.0.1',
          '-p',
          String(port),
          '-U',
          'postgres',
          '-d',
          'postgres',
          '-XAtq',
          '-c',
          sql,
        ],
        { stdio: 'pipe', timeout: 30_000 },
      )
        .toString()
        .trim();
    psql(primaryPort, "ALTER SYSTEM SET synchronous_standby_names = '*'");
    psql(primaryPort, 'SELECT pg_reload_conf()');
    const deadline = Date.now() + 30_000;
    while (
      psql(primaryPort, "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") !==
      '1'
    ) {
      if (Date.now() > deadline)
        throw new Error('the standby did not become synchronous within 30 s');
      execFileSync('sleep', ['0.05']);
    }
  } catch (error) {
    pair.destroy();
    throw error;
  }
  return pair;
}
