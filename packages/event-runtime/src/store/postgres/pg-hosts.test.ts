// Host lists: the multi-host URL a failover manager prints and the `hosts` option, parsed and
// refused with typed errors; against the real server, a list whose first host is down or a
// session that cannot write. The failover itself (a standby promoted under live runtimes) is
// test/store-faults/primary-failover.test.ts.
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import { ErrorCode, type LoomError } from '../../errors.js';
import { openPostgres } from './open-postgres.js';
import { hostsMax, parseHostsOption, splitHostList } from './pg-hosts.js';
import { createPostgresPool, resolvePool } from './pg-pool.js';

const db = useThrowawaySchemas();

function thrown(run: () => unknown): LoomError {
  try {
    run();
  } catch (error) {
    return error as LoomError;
  }
  throw new Error('expected a throw');
}

async function rejected(promise: Promise<unknown>): Promise<LoomError> {
  try {
    await promise;
  } catch (error) {
    return error as LoomError;
  }
  throw new Error('expected a rejection');
}

/** A loopback port nothing listens on (bound, then released). */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('splitHostList', () => {
  it("splits a manager's multi-host URL and keeps a one-host form for pg", () => {
    const list = splitHostList(
      'postgres://app:pw@10.0.0.1:5432,10.0.0.2:6432,[::1]/orders?target_session_attrs=read-write&sslmode=disable',
    );
    expect(list?.hosts).toEqual([
      { host: '10.0.0.1', port: 5432 },
      { host: '10.0.0.2', port: 6432 },
      { host: '::1', port: 5432 },
    ]);
    expect(list?.connectionString).toBe('postgres://app:pw@10.0.0.1:5432/orders?sslmode=disable');
  });

  it('a one-host URL is left alone unless it asks for the read-write server', () => {
    expect(splitHostList('postgres://root@127.0.0.1:5432/test')).toBeUndefined();
    expect(
      splitHostList('postgres://root@127.0.0.1:5432/test?target_session_attrs=primary')?.hosts,
    ).toEqual([{ host: '127.0.0.1', port: 5432 }]);
  });

  for (const [url, problem] of [
    ['postgres://u@h1:5432,,h2/db', /an empty host at index 1/],
    ['postgres://u@h1:5432,h2:99999/db', /port 99999 at index 1/],
    ['postgres://u@h1:5432,h2:x/db', /not host\[:port\] at index 1/],
    ['postgres://u@h1,h1:5432/db', /h1:5432 twice/],
    ['postgres://u@h1,h2/db?target_session_attrs=read-only', /target_session_attrs=read-only/],
    [
      `postgres://u@${Array.from({ length: hostsMax + 1 }, (_, i) => `h${i}`).join(',')}/db`,
      /more than 16/,
    ],
  ] as const) {
    it(`${url.slice(0, 60)} is INVALID_ARGUMENT naming the problem`, () => {
      const error = thrown(() => splitHostList(url));
      expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
      expect(error.message).toMatch(problem);
    });
  }
});

describe('the hosts option', () => {
  it('parses host[:port] strings and refuses a bad list, or hosts given twice', () => {
    expect(parseHostsOption(['db1', 'db2:6432'])).toEqual([
      { host: 'db1', port: 5432 },
      { host: 'db2', port: 6432 },
    ]);
    expect(thrown(() => parseHostsOption([])).code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(thrown(() => parseHostsOption(['db1', 'db1:5432'])).message).toMatch(/twice/);
    const both = thrown(() =>
      resolvePool({ connectionString: 'postgres://u@db1/app', hosts: ['db2'] }),
    );
    expect(both.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(both.message).toMatch(/either in connectionString or in hosts/);
  });

  it('openPostgres with hosts and a host-less URL opens every store on the list', async () => {
    const url = new URL(pgTestUrl);
    const backend = await openPostgres({
      connectionString: `postgres://root@${url.pathname}`,
      hosts: [`127.0.0.1:${await deadPort()}`, url.host],
      schema: db.freshSchema(),
      migrate: true,
    });
    try {
      await backend.events.append([
        { executionId: 'hosts-o', sequence: 0, type: 'n', payload: {} },
      ]);
      const claim = await backend.leases.claimNode('hosts-node');
      expect(claim).toBeDefined();
      await claim?.release();
    } finally {
      await backend.close();
    }
  });

  it('a host-less URL gives user and database; the hosts the servers', async () => {
    const { pool, finder } = resolvePool({
      connectionString: 'postgres://root@/test',
      hosts: ['127.0.0.1:5432'],
    });
    try {
      expect(finder?.hosts).toEqual([{ host: '127.0.0.1', port: 5432 }]);
      const result = await pool.query<{ db: string }>('SELECT current_database() AS db');
      expect(result.rows[0]?.db).toBe('test');
    } finally {
      await pool.end();
    }
  });
});

describe('a host list against the real server', () => {
  it('a first host that refuses is skipped: the store opens, writes and reads on the second', async () => {
    const schema = db.freshSchema();
    const dead = await deadPort();
    const url = new URL(pgTestUrl);
    const backend = await openPostgres({
      connectionString: `postgres://root@127.0.0.1:${dead},${url.host}${url.pathname}`,
      schema,
      migrate: true,
    });
    try {
      const [stored] = await backend.events.append([
        { executionId: 'hosts-a', sequence: 0, type: 'noted', payload: {} },
      ]);
      expect(stored?.sequence).toBe(0);
      expect(await backend.events.read('hosts-a')).toHaveLength(1);
    } finally {
      await backend.close();
    }
  });

  it('no host reachable: STORE_UNAVAILABLE naming each host and why', async () => {
    const [one, two] = [await deadPort(), await deadPort()];
    const error = await rejected(
      openPostgres({
        connectionString: `postgres://root@127.0.0.1:${one},127.0.0.1:${two}/test`,
        schema: db.freshSchema(),
        connectTimeoutMs: 2_000,
      }),
    );
    expect(error.code).toBe(ErrorCode.STORE_UNAVAILABLE);
    expect(error.message).toContain(`127.0.0.1:${one}: ECONNREFUSED`);
    expect(error.message).toContain(`127.0.0.1:${two}: ECONNREFUSED`);
  });

  it('a session that cannot write (default_transaction_read_only) is not taken for the primary', async () => {
    const url = new URL(pgTestUrl);
    const error = await rejected(
      openPostgres({
        connectionString:
          `postgres://root@${url.host}${url.pathname}?target_session_attrs=read-write` +
          '&options=-c%20default_transaction_read_only%3Don',
        schema: db.freshSchema(),
      }),
    );
    expect(error.code).toBe(ErrorCode.STORE_UNAVAILABLE);
    expect(error.message).toMatch(/is a read-write primary .*read-only \(a standby\)/);
  });
});

describe('createPostgresPool', () => {
  it("a pool of one's own over a host list reaches the server; a bad max is INVALID_ARGUMENT", async () => {
    const url = new URL(pgTestUrl);
    const pool = createPostgresPool({
      connectionString: `postgres://root@127.0.0.1:${await deadPort()},${url.host}${url.pathname}`,
      max: 1,
    });
    try {
      const result = await pool.query<{ port: number }>('SELECT inet_server_port() AS port');
      expect(Number(result.rows[0]?.port)).toBe(Number(url.port || 5432));
    } finally {
      await pool.end();
    }
    expect(thrown(() => createPostgresPool({ connectionString: pgTestUrl, max: 0 })).code).toBe(
      ErrorCode.INVALID_ARGUMENT,
    );
  });
});
