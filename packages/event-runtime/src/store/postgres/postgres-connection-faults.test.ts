// Connection faults against the real server: a backend killed under a checked-out client, a
// port that accepts and never answers, an unknown role or database, a malformed URL.
import { createServer, type Server, type Socket } from 'node:net';
import type pg from 'pg';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import { ErrorCode, type LoomError } from '../../errors.js';
import { freshId } from '../../testing/event-store-conformance.js';
import { migrate } from './migrate.js';
import { PostgresEventStore } from './postgres-event-store.js';
import { PostgresLeaseStore } from './postgres-lease-store.js';
import { PostgresQueueStore } from './postgres-queue-store.js';

const db = useThrowawaySchemas();

async function failure(promise: Promise<unknown>): Promise<LoomError> {
  try {
    await promise;
  } catch (error) {
    return error as LoomError;
  }
  throw new Error('expected a rejection, got a value');
}

/** Kills `client`'s backend from the admin pool and waits until the client saw its socket end. */
async function killBackendOf(client: pg.ClientBase): Promise<void> {
  const pid = (client as unknown as { processID: number }).processID;
  const ended = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`client of backend ${pid} never ended`)),
      5_000,
    );
    client.once('end', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  await db.admin.query('SELECT pg_terminate_backend($1)', [pid]);
  await ended;
}

describe('a backend killed under a checked-out client', () => {
  let schema: string;
  beforeAll(async () => {
    schema = db.freshSchema();
    await migrate({ connectionString: pgTestUrl, schema });
  });

  it('transact rejects with STORE_UNAVAILABLE, writes nothing, and the pool recovers', async () => {
    const store = await PostgresEventStore.open({ connectionString: pgTestUrl, schema });
    try {
      const id = freshId('tx-kill');
      const error = await failure(
        store.transact(
          async (tx) => {
            // The backend dies while the transaction is open but idle (the effect is running).
            await killBackendOf(tx as pg.ClientBase);
            return 'done';
          },
          () => [{ executionId: id, sequence: 0, type: 'test.event', payload: {} }],
        ),
      );
      expect(error.code).toBe(ErrorCode.STORE_UNAVAILABLE);
      expect(await store.read(id)).toEqual([]);
      // The broken client left the pool: the next transaction gets a live one.
      const { stored } = await store.transact(
        () => 'ok',
        () => [{ executionId: id, sequence: 0, type: 'test.event', payload: {} }],
      );
      expect(stored).toHaveLength(1);
    } finally {
      await store.close();
    }
  });

  it('a claim of the queue store (a transaction) rejects with STORE_UNAVAILABLE', async () => {
    const queues = await PostgresQueueStore.open({ connectionString: pgTestUrl, schema });
    const pool = (queues as unknown as { handle: { pool: pg.Pool } }).handle.pool;
    const blocker = await db.admin.connect();
    try {
      await queues.enqueue({ queue: 'q', flow: 'f', input: null });
      // Hold the queue's lock row so the claim's transaction waits inside its first statement.
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM "${schema}".queues WHERE queue = 'q' FOR UPDATE`);
      const killed = new Promise<void>((resolve, reject) => {
        pool.once('acquire', (client) => {
          waitUntilWaiting(client)
            .then(() => killBackendOf(client))
            .then(resolve, reject);
        });
      });
      const claim = failure(
        queues.claim('q', { owner: 'n', limit: 1, concurrencyMax: 1, claimTtlMs: 1_000 }),
      );
      await killed;
      await blocker.query('COMMIT');
      expect((await claim).code).toBe(ErrorCode.STORE_UNAVAILABLE);
      const items = await queues.claim('q', {
        owner: 'n',
        limit: 1,
        concurrencyMax: 1,
        claimTtlMs: 1_000,
      });
      expect(items).toHaveLength(1);
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      blocker.release();
      await queues.close();
    }
  });
});

/** Waits (deadline 5 s) until the client's backend is blocked on a lock. */
async function waitUntilWaiting(client: pg.ClientBase): Promise<void> {
  const pid = (client as unknown as { processID: number }).processID;
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const rows = await db.admin.query(
      "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'",
      [pid],
    );
    if (rows.rowCount === 1) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`backend ${pid} never waited on the queue lock`);
}

describe('a server that accepts and never answers', () => {
  let server: Server;
  const sockets = new Set<Socket>();
  let port: number;
  beforeAll(async () => {
    server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
    return async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    };
  });

  it('open gives up after connectTimeoutMs with STORE_UNAVAILABLE', async () => {
    const error = await failure(
      PostgresEventStore.open({
        connectionString: `postgres://root@127.0.0.1:${port}/test`,
        connectTimeoutMs: 200,
      }),
    );
    expect(error.code).toBe(ErrorCode.STORE_UNAVAILABLE);
    expect(error.message).toMatch(/did not answer within connectTimeoutMs/);
  });

  it('the lease store and migrate give up the same way', async () => {
    const connectionString = `postgres://root@127.0.0.1:${port}/test`;
    expect(
      (await failure(PostgresLeaseStore.open({ connectionString, connectTimeoutMs: 200 }))).code,
    ).toBe(ErrorCode.STORE_UNAVAILABLE);
    expect((await failure(migrate({ connectionString, connectTimeoutMs: 200 }))).code).toBe(
      ErrorCode.STORE_UNAVAILABLE,
    );
  });

  it('connectTimeoutMs must be a positive integer, and cannot be combined with a pool', async () => {
    expect((await failure(PostgresEventStore.open({ connectTimeoutMs: 0 }))).code).toBe(
      ErrorCode.INVALID_ARGUMENT,
    );
    expect(
      (await failure(PostgresEventStore.open({ pool: db.admin, connectTimeoutMs: 1_000 }))).code,
    ).toBe(ErrorCode.INVALID_ARGUMENT);
  });
});

describe('a login the server refuses', () => {
  const opened: PostgresEventStore[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  it('an unknown role is STORE_UNAVAILABLE naming the role', async () => {
    const error = await failure(
      PostgresEventStore.open({
        connectionString: 'postgres://no_such_role_x@127.0.0.1:5432/test',
      }),
    );
    expect(error.code).toBe(ErrorCode.STORE_UNAVAILABLE);
    expect(error.message).toMatch(/role "no_such_role_x"/);
    expect(error.message).toMatch(/user name in the connection string/);
  });

  it('an unknown database is STORE_UNAVAILABLE naming the database', async () => {
    const error = await failure(
      PostgresEventStore.open({ connectionString: 'postgres://root@127.0.0.1:5432/no_such_db_x' }),
    );
    expect(error.code).toBe(ErrorCode.STORE_UNAVAILABLE);
    expect(error.message).toMatch(/database "no_such_db_x"/);
    expect(error.message).toMatch(/CREATE DATABASE/);
  });
});

describe('a connection string that is not a PostgreSQL URL', () => {
  for (const [connectionString, problem] of [
    ['http://root@127.0.0.1:5432/test', /scheme "http:"/],
    ['127.0.0.1:5432/test', /postgres:\/\//],
    ['postgres://root@[::1/test', /not a valid URL/],
  ] as const) {
    it(`${connectionString} is INVALID_ARGUMENT naming the problem`, async () => {
      const error = await failure(PostgresEventStore.open({ connectionString }));
      expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
      expect(error.message).toMatch(problem);
    });
  }

  it('a password in a refused URL is not echoed', async () => {
    const error = await failure(
      PostgresEventStore.open({ connectionString: 'http://root:s3cret@127.0.0.1/test' }),
    );
    expect(error.message).not.toMatch(/s3cret/);
  });
});
