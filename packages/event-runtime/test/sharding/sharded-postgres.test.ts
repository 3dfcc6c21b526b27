// The event-store, runtime and backend conformance suites through a ShardedEventStore over three
// real PostgreSQL servers: the shared test server and two throwaway clusters this file starts.
import { describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend.js';
import type { StoredEvent } from '../../src/envelope.js';
import { ErrorCode, type LoomError } from '../../src/errors.js';
import { openSharded, type ShardedBackend } from '../../src/open-sharded.js';
import { ShardCursor, ShardedEventStore, shardOf } from '../../src/sharded-event-store.js';
import { openPostgres } from '../../src/store/postgres/open-postgres.js';
import { PostgresEventStore } from '../../src/store/postgres/postgres-event-store.js';
import { backendConformance } from '../../src/testing/backend-conformance.js';
import { eventStoreConformance, freshId } from '../../src/testing/event-store-conformance.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { runtimeConformance } from '../../src/testing/runtime-conformance.js';
import { until } from '../../src/testing/until.js';
import { type ShardServer, useShardServers } from '../support/shard-servers.js';

const shardServers = useShardServers(2);
const shardCount = 3;

function home(executionId: string): ShardServer {
  return shardServers.servers[shardOf(executionId, shardCount)] as ShardServer;
}

async function openStores(schema: string): Promise<ShardedEventStore> {
  const stores = await Promise.all(
    shardServers.servers.map((server) =>
      PostgresEventStore.open({ connectionString: server.url, schema, pollIntervalMs: 200 }),
    ),
  );
  return new ShardedEventStore(stores);
}

async function openBackends(
  schema: string,
  options: { clock?: ManualClock } = {},
): Promise<ShardedBackend> {
  // Opened on the servers at once; if one fails, the others are closed before the error goes on.
  const opened = await Promise.allSettled(
    shardServers.servers.map((server) =>
      openPostgres({ connectionString: server.url, schema, migrate: true, ...options }),
    ),
  );
  const backends: Backend[] = [];
  for (const result of opened) if (result.status === 'fulfilled') backends.push(result.value);
  const failed = opened.find((result) => result.status === 'rejected');
  if (failed !== undefined) {
    for (const backend of backends) await backend.close();
    throw failed.reason;
  }
  return openSharded(backends);
}

// The whole suites run through ShardedEventStore over memory stores (sharded-event-store.test.ts):
// the routing is the same code whatever the shards are. Over three real servers run again only the
// sections where the shards' own answers are merged (the log, the index, signals, due claims,
// subscriptions) and where an execution's whole life crosses the router.
eventStoreConformance(
  'sharded over 3 postgres servers',
  async () => {
    const schema = await shardServers.migratedSchema();
    const store = await openStores(schema);
    const peers: ShardedEventStore[] = [];
    return {
      store,
      crossExecutionOrder: 'per-execution',
      openPeer: async () => {
        const peer = await openStores(schema);
        peers.push(peer);
        return peer;
      },
      countRows: async (executionId) =>
        Number(
          (
            await home(executionId).admin.query(
              `SELECT count(*) AS n FROM "${schema}".events WHERE execution_id = $1`,
              [executionId],
            )
          ).rows[0].n,
        ),
      tamper: async (executionId, sequence, payloadText) => {
        await home(executionId).admin.query(
          `UPDATE "${schema}".events SET payload = $3 WHERE execution_id = $1 AND sequence = $2`,
          [executionId, sequence, payloadText],
        );
      },
      close: async () => {
        await Promise.all([store.close(), ...peers.map((peer) => peer.close())]);
        await shardServers.releaseSchema(schema);
      },
    };
  },
  {
    sections: [
      'append and read',
      'readAll',
      'execution index',
      'finding executions',
      'signals and due executions',
      'claimDue kept to the flows a node runs (options.flows)',
      'subscribe',
      'prune',
      'hash chain',
    ],
  },
);

runtimeConformance(
  'sharded over 3 postgres servers',
  async () => {
    const clock = new ManualClock();
    const schema = await shardServers.migratedSchema();
    const backend = await openBackends(schema, { clock });
    return {
      store: backend.events,
      leases: backend.leases,
      snapshots: backend.snapshots,
      clock,
      countRows: async (executionId) =>
        Number(
          (
            await home(executionId).admin.query(
              `SELECT count(*) AS n FROM "${schema}".events WHERE execution_id = $1`,
              [executionId],
            )
          ).rows[0].n,
        ),
      close: async () => {
        await backend.close();
        await shardServers.releaseSchema(schema);
      },
    };
  },
  {
    sections: [
      'steps and barriers',
      'replay and resume',
      'durable time, signals, values, versions, children, continue-as-new',
      'recovery',
      'recovery of dead nodes',
    ],
  },
);

backendConformance('sharded over 3 postgres servers', () =>
  openBackends(shardServers.freshSchema()),
);

describe('sharded over 3 postgres servers', () => {
  it('each execution is stored on its own server only, and a cursor read sees all three', async () => {
    const schema = await shardServers.migratedSchema();
    const backend = await openBackends(schema);
    try {
      const ids: string[] = [];
      for (let shard = 0; ids.length < shardCount; ) {
        const id = freshId('spread');
        if (shardOf(id, shardCount) === shard) {
          ids.push(id);
          shard += 1;
        }
      }
      for (const id of ids) {
        await backend.events.append([
          { executionId: id, sequence: 0, type: 'execution.started', payload: {} },
        ]);
      }
      for (const [shard, server] of shardServers.servers.entries()) {
        const rows = await server.admin.query(`SELECT execution_id FROM "${schema}".events`);
        expect(rows.rows.map((row) => row.execution_id)).toEqual([ids[shard]]);
      }
      // readAll holds a row back until every older transaction on its server ended (a reader's
      // cursor must never pass a row that commits later), and the servers are shared: wait.
      let events: StoredEvent[] = [];
      await until(async () => {
        events = await backend.events.readAll({ after: ShardCursor.start(shardCount) });
        return events.length >= ids.length;
      }, 'readAll to see the three executions');
      expect(events.map((event) => event.executionId).sort()).toEqual([...ids].sort());
      expect(ShardCursor.start(shardCount).advance(events).toString()).toBe('1.1.1');
    } finally {
      await backend.close();
      await shardServers.releaseSchema(schema);
    }
  });

  it('a plain position no shard holds is INVALID_ARGUMENT naming the merged position', async () => {
    const schema = await shardServers.migratedSchema();
    const backend = await openBackends(schema);
    try {
      const position = 999_999 * shardCount + 1;
      const error = await backend.events.readAll({ afterPosition: position }).then(
        () => undefined,
        (caught: unknown) => caught as LoomError,
      );
      expect(error?.code).toBe(ErrorCode.INVALID_ARGUMENT);
      expect(error?.fields).toMatchObject({ path: 'afterPosition', actual: position });
      expect(error?.message).toContain(`afterPosition ${position}`);
    } finally {
      await backend.close();
      await shardServers.releaseSchema(schema);
    }
  });
});
