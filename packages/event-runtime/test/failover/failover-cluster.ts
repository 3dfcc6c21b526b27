// A Postgres primary and a synchronous standby under pg_auto_failover (ADR 0056), on loopback
// ports of a temp dir of their own: a monitor, two data nodes, each run by its `pg_autoctl run`
// keeper as the postgres user (initdb and the server refuse root). Never the shared server on
// 5432. `scripts/ensure-failover.sh` installs pg_auto_failover where it is missing.
//
// `killPrimary` SIGKILLs every process of the primary node at once (its keeper, the keeper's
// services, the postmaster and its backends): the machine is gone, nobody restarts it, and the
// manager alone decides the promotion. Every wait reads the monitor's own state
// (`pgautofailover.node`, `pgautofailover.event`) under a deadline that names what it waited for.
//
// The agents' campaign (packages/agent-loop/test/failover/) imports this file by a relative path,
// on purpose not through an `exports` door: it runs as root, needs Debian's server binaries and
// pg_autoctl, and is no API a user should build on (`campaign:failover` is theirs).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort, postgresBinDir, postgresUserIds } from '../support/postgres-server.js';

const run = promisify(execFile);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The manager's timings. Monitor settings (`pgautofailover.*` GUCs, milliseconds) and one keeper
 * setting (`timeout.network_partition_timeout`, seconds, in each data node's pg_autoctl.cfg).
 */
export interface FailoverTimings {
  /** pgautofailover.health_check_period: how often the monitor connects to each node. */
  healthCheckPeriodMs: number;
  /** pgautofailover.health_check_timeout: the connect timeout of one health check. */
  healthCheckTimeoutMs: number;
  /** pgautofailover.health_check_max_retries: failed checks in a row before a node is "bad". */
  healthCheckMaxRetries: number;
  /** pgautofailover.health_check_retry_delay: the wait between those retries. */
  healthCheckRetryDelayMs: number;
  /**
   * pgautofailover.node_considered_unhealthy_timeout: a node whose keeper has not reported for
   * this long and whose health check fails is unhealthy; a primary that is unhealthy starts the
   * failover.
   */
  nodeConsideredUnhealthyTimeoutMs: number;
  /**
   * pgautofailover.primary_demote_timeout: how long the monitor gives a possibly-alive old
   * primary to demote itself before the standby, already promoted, is let take writes.
   */
  primaryDemoteTimeoutMs: number;
  /** pgautofailover.startup_grace_period: no failover this soon after the monitor started. */
  startupGracePeriodMs: number;
  /**
   * Keeper `timeout.network_partition_timeout` (seconds): a primary that reaches neither the
   * monitor nor a standby for this long demotes itself. Kept below primaryDemoteTimeoutMs, so a
   * partitioned old primary has stopped before the new one takes writes.
   */
  networkPartitionTimeoutS: number;
}

/** pg_auto_failover 2.0's defaults: a lost primary is replaced in about 50 s (ADR 0056). */
export const defaultFailoverTimings: FailoverTimings = {
  healthCheckPeriodMs: 5_000,
  healthCheckTimeoutMs: 5_000,
  healthCheckMaxRetries: 2,
  healthCheckRetryDelayMs: 2_000,
  nodeConsideredUnhealthyTimeoutMs: 20_000,
  primaryDemoteTimeoutMs: 30_000,
  startupGracePeriodMs: 10_000,
  networkPartitionTimeoutS: 20,
};

/**
 * Loom's tuned timings for a loopback or LAN cluster: a lost primary is replaced in about 9 s
 * (ADR 0056 measures both and says what each setting costs).
 */
export const tunedFailoverTimings: FailoverTimings = {
  healthCheckPeriodMs: 1_000,
  healthCheckTimeoutMs: 1_000,
  healthCheckMaxRetries: 1,
  healthCheckRetryDelayMs: 500,
  nodeConsideredUnhealthyTimeoutMs: 4_000,
  primaryDemoteTimeoutMs: 4_000,
  startupGracePeriodMs: 2_000,
  networkPartitionTimeoutS: 3,
};

export interface FailoverNode {
  readonly name: string;
  readonly port: number;
  readonly pgdata: string;
  /** postgres://root@127.0.0.1:<port>/test: this node only. */
  readonly url: string;
}

/** What the monitor says of one node. */
export interface NodeState {
  name: string;
  reported: string;
  goal: string;
}

export interface Promotion {
  node: FailoverNode;
  /** When the monitor recorded the node reporting wait_primary (it takes writes), epoch ms. */
  reportedAtMs: number;
}

export interface FailoverCluster {
  readonly directory: string;
  readonly nodes: readonly [FailoverNode, FailoverNode];
  /** Both nodes, the writable one found on connect: what a worker is given. */
  readonly multiHostUrl: string;
  readonly timings: FailoverTimings;
  /** The monitor's view of each data node. */
  states(): Promise<NodeState[]>;
  /** The node the monitor has as primary (reported and assigned primary or wait_primary). */
  primary(): Promise<FailoverNode>;
  /** SIGKILLs every process of the primary node at once; returns it and when (epoch ms). */
  killPrimary(): Promise<{ node: FailoverNode; atMs: number }>;
  /** Waits until the monitor records the other node taking writes after `afterMs`. */
  waitForPromotion(old: FailoverNode, afterMs: number, deadlineMs: number): Promise<Promotion>;
  /** Waits until an INSERT commits on `node`; returns when (epoch ms). */
  waitForWrites(node: FailoverNode, deadlineMs: number): Promise<number>;
  /** Restarts a killed node's keeper and waits until the monitor has it as secondary again. */
  rejoin(node: FailoverNode, deadlineMs: number): Promise<void>;
  /** Stops every keeper (and so every server) and removes the directory. Idempotent. */
  stop(): Promise<void>;
}

export interface FailoverClusterOptions {
  timings?: FailoverTimings;
  /** Progress lines (what is being set up, what the monitor said). */
  log?: (line: string) => void;
}

/** Promotion to writable: the new primary's keeper reports one of these. */
const writableStates = ['wait_primary', 'primary'];
/**
 * Longest the whole bring-up may take (initdb, the monitor, a base backup; 10-20 s on a busy box):
 * under the tests' 60 s, so a bring-up that cannot finish fails naming the step it was on rather
 * than as the test's timeout.
 */
const setupMs = 50_000;
/** Longest a keeper takes to stop its server at teardown before it is SIGKILLed. */
const keeperStopMs = 15_000;

/** Every descendant of `root` (from /proc), parents before children. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // Gone meanwhile.
    }
    // pid (comm) state ppid …: comm may hold spaces and parentheses, so split after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(entry));
    children.set(ppid, list);
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift() as number;
    for (const child of children.get(pid) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/** `check` until it returns a value, or an error naming `what` (and the last error) after `deadlineMs`. */
export async function waitUntil<T>(
  check: () => Promise<T | undefined>,
  what: string,
  deadlineMs: number,
  everyMs = 100,
): Promise<T> {
  const until = Date.now() + deadlineMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > until)
      throw new Error(
        `${what}: not within ${deadlineMs} ms${last === undefined ? '' : ` (last error: ${String(last)})`}`,
      );
    await pause(everyMs);
  }
}

/**
 * Creates and starts the monitor and two data nodes (node1 primary, node2 its synchronous
 * standby) and waits until the monitor has them as primary and secondary. Throws (after tearing
 * down what it made) when pg_auto_failover is not installed or the cluster does not come up.
 */
export async function startFailoverCluster(
  options: FailoverClusterOptions = {},
): Promise<FailoverCluster> {
  const timings = options.timings ?? tunedFailoverTimings;
  const log = options.log ?? (() => undefined);
  const bin = postgresBinDir();
  const pgAutoctl = (
    await run('sh', ['-c', 'command -v pg_autoctl']).catch(() => undefined)
  )?.stdout.trim();
  if (pgAutoctl === undefined || pgAutoctl === '')
    throw new Error(
      'pg_autoctl is not installed: run `bash scripts/ensure-failover.sh` (Debian pg-auto-failover-cli and postgresql-<major>-auto-failover)',
    );
  const { uid, gid } = postgresUserIds();
  const directory = mkdtempSync(join(tmpdir(), 'loom-failover-'));
  chownSync(directory, uid, gid);
  chmodSync(directory, 0o700);
  const env = {
    PATH: `${bin}:/usr/local/bin:/usr/bin:/bin`,
    // pg_autoctl keeps its configuration and state under these: inside the directory, so
    // nothing outlives the cluster.
    XDG_CONFIG_HOME: join(directory, 'config'),
    XDG_DATA_HOME: join(directory, 'share'),
    XDG_RUNTIME_DIR: join(directory, 'run'),
    PGHOST: directory,
    HOME: directory,
    LANG: 'C.UTF-8',
  };
  const setupEndsAt = Date.now() + setupMs;
  /** What is left of the bring-up's budget, for the step about to start. */
  const setupLeftMs = () => Math.max(1_000, setupEndsAt - Date.now());
  const asPostgres = async (file: string, args: string[], what: string) => {
    try {
      await run(file, args, { uid, gid, env, cwd: directory, timeout: setupLeftMs() });
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string };
      throw new Error(`failover cluster: ${what} failed: ${String(error)}\n${stdout}\n${stderr}`);
    }
  };
  // Every server of the cluster: loopback only, its socket in the directory, a small cache (the
  // machine is shared), and no fsync: the campaign kills processes, never the machine, so the
  // page cache survives every kill (`pg_basebackup` copies this file to the standby).
  const overrides = [
    `unix_socket_directories = '${directory}'`,
    "shared_buffers = '32MB'",
    'fsync = off',
    'max_connections = 100',
    '',
  ].join('\n');

  const [monitorPort, port1, port2] = [await freePort(), await freePort(), await freePort()];
  const node = (name: string, port: number): FailoverNode => ({
    name,
    port,
    pgdata: join(directory, name),
    url: `postgres://root@127.0.0.1:${port}/test`,
  });
  const nodes: [FailoverNode, FailoverNode] = [node('node1', port1), node('node2', port2)];
  const monitorData = join(directory, 'monitor');
  const monitorAdminUrl = `postgres://postgres@127.0.0.1:${monitorPort}/pg_auto_failover`;
  const monitorUrl = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`;
  const keepers = new Map<string, ChildProcess>();
  let stopped = false;

  const startKeeper = (name: string) => {
    const out = openSync(join(directory, `${name}.log`), 'a');
    const keeper = spawn(pgAutoctl, ['run', '--pgdata', join(directory, name)], {
      uid,
      gid,
      env,
      cwd: directory,
      stdio: ['ignore', out, out],
    });
    closeSync(out);
    keeper.on('error', (error) => log(`keeper ${name}: ${String(error)}`));
    keepers.set(name, keeper);
  };

  let monitor: pg.Pool | undefined;
  const monitorQuery = async (sql: string, values: unknown[] = []) => {
    if (monitor === undefined) {
      monitor = new pg.Pool({
        connectionString: monitorUrl,
        max: 1,
        connectionTimeoutMillis: 2_000,
      });
      // An idle connection the monitor's restart ended: the next query opens another.
      monitor.on('error', () => undefined);
    }
    return (await monitor.query(sql, values)).rows;
  };

  // The last guard against orphans: a process that ends (or crashes) takes the cluster along.
  const killEverything = () => {
    for (const keeper of keepers.values()) {
      if (keeper.pid === undefined) continue;
      for (const pid of descendants(keeper.pid)) killQuietly(pid, 'SIGKILL');
      killQuietly(keeper.pid, 'SIGKILL');
    }
  };
  process.once('exit', killEverything);

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.off('exit', killEverything);
    await monitor?.end().catch(() => undefined);
    // A keeper stops its server (fast) on SIGTERM; one that does not in time is SIGKILLed with
    // everything under it.
    const exits = [...keepers.values()]
      .filter((keeper) => keeper.exitCode === null && keeper.signalCode === null)
      .map((keeper) => {
        const exited = new Promise<void>((resolve) => keeper.once('exit', () => resolve()));
        keeper.kill('SIGTERM');
        return Promise.race([exited.then(() => true), pause(keeperStopMs).then(() => false)]).then(
          (clean) => {
            if (clean) return;
            const pid = keeper.pid as number;
            for (const child of descendants(pid)) killQuietly(child, 'SIGKILL');
            killQuietly(pid, 'SIGKILL');
          },
        );
      });
    await Promise.all(exits);
    // A server whose keeper died first (the killed primary's is already gone).
    for (const name of ['monitor', 'node1', 'node2']) {
      const pidFile = join(directory, name, 'postmaster.pid');
      if (!existsSync(pidFile)) continue;
      const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
      if (
        pid > 0 &&
        existsSync(`/proc/${pid}`) &&
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(directory)
      ) {
        killQuietly(pid, 'SIGKILL');
      }
    }
    // LOOM_FAILOVER_KEEP=1 leaves the directory (the keepers' logs) for reading.
    if (process.env.LOOM_FAILOVER_KEEP === '1') log(`failover cluster: kept ${directory}`);
    else rmSync(directory, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  };

  const states = async (): Promise<NodeState[]> =>
    (
      await monitorQuery(
        'SELECT nodename, reportedstate::text AS reported, goalstate::text AS goal FROM pgautofailover.node ORDER BY nodeid',
      )
    ).map((row) => ({ name: row.nodename, reported: row.reported, goal: row.goal }));

  const byName = (name: string) => {
    const found = nodes.find((candidate) => candidate.name === name);
    if (found === undefined)
      throw new Error(`failover cluster: the monitor names an unknown node ${name}`);
    return found;
  };

  const primary = async () => {
    const list = await states();
    const writable = list.filter(
      (state) => writableStates.includes(state.reported) && state.reported === state.goal,
    );
    if (writable.length !== 1)
      throw new Error(`failover cluster: no single primary in ${JSON.stringify(list)}`);
    return byName((writable[0] as NodeState).name);
  };

  const waitForPair = (deadlineMs: number) =>
    waitUntil(
      async () => {
        const list = await states();
        const ok =
          list.length === 2 &&
          list.some((state) => state.reported === 'primary' && state.goal === 'primary') &&
          list.some((state) => state.reported === 'secondary' && state.goal === 'secondary');
        return ok ? list : undefined;
      },
      'the monitor having one primary and one secondary',
      deadlineMs,
      200,
    );

  try {
    log(
      `failover cluster in ${directory}: monitor :${monitorPort}, node1 :${port1}, node2 :${port2}`,
    );
    await asPostgres(
      join(bin, 'initdb'),
      ['-D', monitorData, '-A', 'trust', '--no-sync'],
      'initdb of the monitor',
    );
    appendFileSync(join(monitorData, 'postgresql.auto.conf'), overrides);
    await asPostgres(
      pgAutoctl,
      [
        'create',
        'monitor',
        '--pgdata',
        monitorData,
        '--pgport',
        String(monitorPort),
        '--hostname',
        '127.0.0.1',
        '--auth',
        'trust',
        '--no-ssl',
      ],
      'pg_autoctl create monitor',
    );
    await asPostgres(
      pgAutoctl,
      ['config', 'set', '--pgdata', monitorData, 'postgresql.listen_addresses', '127.0.0.1'],
      'listen_addresses of the monitor',
    );
    startKeeper('monitor');
    await waitUntil(
      async () => (await monitorQuery('SELECT 1 AS one'))[0],
      'the monitor answering',
      setupLeftMs(),
      200,
    );
    // The monitor's timings are reloadable settings (PGC_SIGHUP).
    const admin = new pg.Client({ connectionString: monitorAdminUrl });
    await admin.connect();
    try {
      const settings: Array<[string, number]> = [
        ['health_check_period', timings.healthCheckPeriodMs],
        ['health_check_timeout', timings.healthCheckTimeoutMs],
        ['health_check_max_retries', timings.healthCheckMaxRetries],
        ['health_check_retry_delay', timings.healthCheckRetryDelayMs],
        ['node_considered_unhealthy_timeout', timings.nodeConsideredUnhealthyTimeoutMs],
        ['primary_demote_timeout', timings.primaryDemoteTimeoutMs],
        ['startup_grace_period', timings.startupGracePeriodMs],
      ];
      for (const [name, value] of settings) {
        await admin.query(`ALTER SYSTEM SET pgautofailover.${name} = ${Number(value)}`);
      }
      await admin.query('SELECT pg_reload_conf()');
    } finally {
      await admin.end();
    }

    for (const [index, data] of nodes.entries()) {
      if (index === 0) {
        await asPostgres(
          join(bin, 'initdb'),
          ['-D', data.pgdata, '-A', 'trust', '--no-sync'],
          `initdb of ${data.name}`,
        );
        appendFileSync(join(data.pgdata, 'postgresql.auto.conf'), overrides);
      }
      // The first node registers as the primary; the second takes a base backup of it and
      // becomes its standby, synchronous once caught up (replication quorum, the default).
      await asPostgres(
        pgAutoctl,
        [
          'create',
          'postgres',
          '--pgdata',
          data.pgdata,
          '--pgport',
          String(data.port),
          '--pghost',
          directory,
          '--listen',
          '127.0.0.1',
          '--hostname',
          '127.0.0.1',
          '--name',
          data.name,
          '--username',
          'root',
          '--dbname',
          'test',
          '--monitor',
          monitorUrl,
          '--auth',
          'trust',
          '--no-ssl',
        ],
        `pg_autoctl create postgres (${data.name})`,
      );
      await asPostgres(
        pgAutoctl,
        [
          'config',
          'set',
          '--pgdata',
          data.pgdata,
          'timeout.network_partition_timeout',
          String(timings.networkPartitionTimeoutS),
        ],
        `network_partition_timeout of ${data.name}`,
      );
      startKeeper(data.name);
      if (index === 0)
        await waitUntil(
          async () =>
            (await states()).some((state) => state.reported === 'single' && state.goal === 'single')
              ? true
              : undefined,
          'node1 becoming the primary',
          setupLeftMs(),
          200,
        );
    }
    await waitForPair(setupLeftMs());
    log('failover cluster: node1 primary, node2 synchronous standby');
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    directory,
    nodes,
    multiHostUrl: `postgres://root@127.0.0.1:${port1},127.0.0.1:${port2}/test?target_session_attrs=read-write`,
    timings,
    states,
    primary,
    async killPrimary() {
      const victim = await primary();
      const keeper = keepers.get(victim.name);
      if (keeper?.pid === undefined)
        throw new Error(`failover cluster: no keeper runs ${victim.name}`);
      const pids = [keeper.pid, ...descendants(keeper.pid)];
      for (const pid of pids) killQuietly(pid, 'SIGKILL');
      // Taken once every SIGKILL is sent: the walsender is gone with the rest, so no commit of
      // the old primary can reach the synchronous standby after this instant; an event stamped
      // later that is found on a server was committed by the new primary.
      const atMs = Date.now();
      // A backend forked between the look and the kill dies with its postmaster; nothing of the
      // node may outlive this call.
      await waitUntil(
        async () =>
          pids.every(
            (pid) =>
              !existsSync(`/proc/${pid}`) ||
              readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z '),
          )
            ? true
            : undefined,
        `every process of ${victim.name} gone after the SIGKILL`,
        10_000,
        20,
      );
      keepers.delete(victim.name);
      log(`failover cluster: SIGKILLed ${victim.name} (${pids.length} processes)`);
      return { node: victim, atMs };
    },
    async waitForPromotion(old, afterMs, deadlineMs) {
      const other = nodes.find((candidate) => candidate !== old) as FailoverNode;
      return waitUntil(
        async () => {
          const rows = await monitorQuery(
            `SELECT (extract(epoch FROM e.eventtime) * 1000)::bigint AS at
               FROM pgautofailover.event e JOIN pgautofailover.node n USING (nodeid)
              WHERE n.nodename = $1 AND e.reportedstate::text = ANY($2)
                AND e.eventtime >= to_timestamp($3 / 1000.0)
              ORDER BY e.eventtime LIMIT 1`,
            [other.name, writableStates, afterMs],
          );
          const at = rows[0]?.at;
          return at === undefined ? undefined : { node: other, reportedAtMs: Number(at) };
        },
        `the monitor promoting ${other.name} after ${old.name} was killed`,
        deadlineMs,
        100,
      );
    },
    async waitForWrites(target, deadlineMs) {
      return waitUntil(
        async () => {
          const client = new pg.Client({
            connectionString: target.url,
            connectionTimeoutMillis: 1_000,
          });
          client.on('error', () => undefined);
          try {
            await client.connect();
            await client.query(
              'CREATE TABLE IF NOT EXISTS loom_failover_probe (at bigint NOT NULL)',
            );
            await client.query('INSERT INTO loom_failover_probe (at) VALUES ($1)', [Date.now()]);
            return Date.now();
          } finally {
            await client.end().catch(() => undefined);
          }
        },
        `${target.name} accepting writes`,
        deadlineMs,
        100,
      );
    },
    async rejoin(target, deadlineMs) {
      startKeeper(target.name);
      await waitUntil(
        async () =>
          (await states()).some(
            (state) =>
              state.name === target.name &&
              state.reported === 'secondary' &&
              state.goal === 'secondary',
          )
            ? true
            : undefined,
        `${target.name} rejoining as the secondary`,
        deadlineMs,
        200,
      );
      await waitForPair(deadlineMs);
    },
    stop,
  };
}
