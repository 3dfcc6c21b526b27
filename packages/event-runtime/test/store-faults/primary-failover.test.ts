// Losing the Postgres primary, the way it happens: a primary and a synchronous streaming standby
// of the test's own on loopback, the primary SIGKILLed (postmaster and backends) while two live
// runtimes are mid-effect, the standby promoted (what a failover manager does). Both runtimes
// were opened with the host list `postgres://…:P1,…:P2/…?target_session_attrs=read-write` and
// must carry on by themselves: find the new primary, claim their node ids again, take none of
// each other's executions, finish everything started before the kill with each gated effect run
// once, and take over the executions of a third node that really is gone (opened with the old
// primary's address alone, it can never come back). A store subscription without polling hears
// appends on the new primary: its LISTEN connection re-listened there. Before the failover, the
// standby listed first is skipped, and a session on the standby answers 25006 as a lost
// connection (STORE_UNAVAILABLE), not a permanent STORE_READ_ONLY. ADR 0055.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode, type Flow, type StoredEvent } from '../../src/index.js';
import { createKernelRuntime, type KernelRuntime } from '../../src/kernel.js';
import { openPostgres, type PostgresBackend, PostgresEventStore } from '../../src/postgres.js';
import { deadNodeConfirmMs } from '../../src/runtime/execution-recovery.js';
import { listenerProcessId, until } from '../../src/testing.js';
import { startTcpForwarder } from '../support/tcp-forwarder.js';
import { type ReplicaPair, startReplicaPair } from '../support/throwaway-replica-pair.js';

let pair: ReplicaPair;
let hostList: string;

beforeAll(async () => {
  pair = await startReplicaPair();
  hostList =
    `postgres://postgres@127.0.0.1:${pair.primaryPort},127.0.0.1:${pair.standbyPort}/postgres` +
    '?target_session_attrs=read-write';
});

afterAll(() => {
  pair?.destroy();
});

async function codeOf(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    return { code: String(code), message };
  }
  throw new Error('expected a rejection');
}

async function serverPort(backend: PostgresBackend): Promise<number> {
  const result = await backend.events.connectionPool.query<{ port: number }>(
    'SELECT inet_server_port() AS port',
  );
  return Number(result.rows[0]?.port);
}

describe('a host list with a standby', () => {
  it('skips a standby listed first, and a standby alone answers 25006 as STORE_UNAVAILABLE', async () => {
    const schema = 'loom_hosts';
    const standbyFirst =
      `postgres://postgres@127.0.0.1:${pair.standbyPort},127.0.0.1:${pair.primaryPort}/postgres` +
      '?target_session_attrs=read-write';
    const backend = await openPostgres({ connectionString: standbyFirst, schema, migrate: true });
    try {
      expect(await serverPort(backend)).toBe(pair.primaryPort);
      const [stored] = await backend.events.append([
        { executionId: 'hosts-1', sequence: 0, type: 'noted', payload: { n: 1 } },
      ]);
      expect(stored?.sequence).toBe(0);
    } finally {
      await backend.close();
    }

    // The standby at its address alone (an old primary rejoining where it was, a stale VIP).
    const standby = new pg.Pool({ connectionString: pair.url(pair.standbyPort), max: 1 });
    standby.on('error', () => {});
    await until(async () => {
      const rows = await standby.query(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = 'loom_hosts' LIMIT 1",
      );
      return rows.rowCount === 1;
    }, 'the schema to be replayed on the standby');
    await standby.end();
    const onStandby = await PostgresEventStore.open({
      connectionString: pair.url(pair.standbyPort),
      schema,
    });
    try {
      const refused = await codeOf(
        onStandby.append([{ executionId: 'hosts-2', sequence: 0, type: 'noted', payload: {} }]),
      );
      expect(refused.code).toBe(ErrorCode.STORE_UNAVAILABLE);
      expect(refused.message).toMatch(/read-only .*25006/);
    } finally {
      await onStandby.close();
    }

    // Only the standby listed, asking for the primary: unavailable, naming why, never opened.
    const noPrimary = await codeOf(
      openPostgres({
        connectionString: `${pair.url(pair.standbyPort)}?target_session_attrs=read-write`,
        schema,
      }),
    );
    expect(noPrimary.code).toBe(ErrorCode.STORE_UNAVAILABLE);
    expect(noPrimary.message).toMatch(/no host of 127\.0\.0\.1:\d+ is a read-write primary/);
    expect(noPrimary.message).toContain('read-only (a standby)');
  });
});

describe('the primary SIGKILLed and the standby promoted', () => {
  it('two live runtimes carry on by themselves; a dead third node is taken over', async () => {
    const schema = 'loom_failover';
    const perNode = 6;
    const earlyPerNode = 2;
    const effectRuns = new Map<string, number>();
    // 'late' effects finish once the failover is over; 'early' ones while the primary is down,
    // so their result's append fails (or its acknowledgement is lost) and the node resumes
    // them from the log: a plain effect may then run again, on its own node only.
    const gate = () => {
      let resolve: () => void = () => undefined;
      const promise = new Promise<void>((done) => {
        resolve = done;
      });
      return { promise, resolve };
    };
    const gates = { late: gate(), early: gate() };
    const open = () => {
      gates.early.resolve();
      gates.late.resolve();
    };
    const flow: Flow<'late' | 'early', string> = {
      name: 'failover-effect',
      run: async (ctx, gate) => {
        await ctx.step('effect', async () => {
          effectRuns.set(ctx.executionId, (effectRuns.get(ctx.executionId) ?? 0) + 1);
          await gates[gate].promise;
          return 1;
        });
        await ctx.step('after', async () => 2);
        return 'done';
      },
    };
    const opened: PostgresBackend[] = [];
    const forwarder = await startTcpForwarder(pair.standbyPort);
    const runtimes: KernelRuntime[] = [];
    const resumedBy = new Map<string, string[]>();
    const claims = { lost: new Map<string, number>(), regained: new Map<string, number>() };
    const node = async (nodeId: string, connectionString: string) => {
      const backend = await openPostgres({ connectionString, schema, connectTimeoutMs: 2_000 });
      opened.push(backend);
      const runtime = createKernelRuntime({
        store: backend.events,
        leases: backend.leases,
        flows: [flow as Flow<never, unknown>],
        nodeId,
        // No periodic rounds: a node has never looked at its peers' executions before the
        // kill, and its first round is the one it runs the moment it holds its claim again.
        recoverEveryMs: 60_000,
        timerPollMs: 100,
        onError: () => undefined,
      });
      runtimes.push(runtime);
      runtime.events.on('execution:resumed', (event) => {
        resumedBy.set(event.executionId, [...(resumedBy.get(event.executionId) ?? []), nodeId]);
      });
      runtime.events.on('node:claim_lost', () => {
        claims.lost.set(nodeId, (claims.lost.get(nodeId) ?? 0) + 1);
      });
      runtime.events.on('node:claimed', () => {
        claims.regained.set(nodeId, (claims.regained.get(nodeId) ?? 0) + 1);
        // The worst moment for the peer: it may not hold its own claim again yet.
        void runtime.recover().catch(() => undefined);
        if (nodeId === 'node-a') {
          // B's path to the new primary comes back half a second after A holds its claim.
          setTimeout(() => forwarder.setBlocked(false), 500);
        }
      });
      return runtime;
    };
    await (await openPostgres({ connectionString: hostList, schema, migrate: true })).close();
    const observer = await PostgresEventStore.open({
      connectionString: hostList,
      schema,
      pollIntervalMs: 0,
    });
    const heard: StoredEvent[] = [];
    let subscriptionError: unknown;
    const subscription = observer.subscribe(
      { onError: (error) => (subscriptionError = error) },
      (batch) => {
        heard.push(...batch);
      },
    );
    try {
      const a = await node('node-a', hostList);
      // B reaches the standby through a path the test cuts during the failover: B finds the new
      // primary about a second after A, as a worker on a slower network (or with a longer
      // backoff) does. A's first round after its reclaim must not read B as dead.
      const b = await node(
        'node-b',
        `postgres://postgres@127.0.0.1:${pair.primaryPort},127.0.0.1:${forwarder.port}/postgres` +
          '?target_session_attrs=read-write',
      );
      // The third node knows only the old primary's address: after the kill it is gone for good.
      const c = await node('node-c', pair.url(pair.primaryPort));
      const ids = { a: [] as string[], b: [] as string[], c: [] as string[] };
      const early: string[] = [];
      const handles = [];
      for (const [name, runtime] of [
        ['a', a],
        ['b', b],
        ['c', c],
      ] as const) {
        for (let index = 0; index < perNode; index++) {
          const gate = name !== 'c' && index < earlyPerNode ? 'early' : 'late';
          const id = `fo-${name}-${gate}-${index}`;
          const handle = await runtime.start(flow as Flow<never, unknown>, gate as never, {
            executionId: id,
          });
          ids[name].push(id);
          if (gate === 'early') early.push(id);
          if (name !== 'c') handles.push(handle);
        }
      }
      const all = [...ids.a, ...ids.b, ...ids.c];
      await until(() => effectRuns.size === all.length, 'every effect to start on its node');
      await until(() => listenerProcessId(observer) !== undefined, 'the observer to LISTEN');
      const listenerBefore = listenerProcessId(observer);
      const live = ['node-a', 'node-b'];
      const heardBefore = heard.length;

      forwarder.setBlocked(true);
      pair.killPrimary();
      gates.early.resolve();
      await until(
        () => live.every((id) => (claims.lost.get(id) ?? 0) > 0),
        'nodes A and B to see their claims end with the old primary',
      );
      // What an orchestrator's readiness probe sees meanwhile: not ready, and why.
      const down = await a.health({ timeoutMs: 2_000 });
      expect(down.ready).toBe(false);
      expect(down.store.reachable).toBe(false);
      expect(down.store.error?.code).toBe(ErrorCode.STORE_UNAVAILABLE);
      expect(down.nodeClaim).toBe('lost');
      // A failover manager takes seconds to promote (51 s with pg_auto_failover's defaults): an
      // outage longer than deadNodeConfirmMs, so a node's memory of its peers from before it
      // is stale by the time it claims again. Whoever reclaims first must still wait for the other.
      await new Promise((resolve) => setTimeout(resolve, deadNodeConfirmMs + 500));
      pair.promoteStandby();

      await until(
        () => live.every((id) => (claims.regained.get(id) ?? 0) > 0),
        'nodes A and B to claim their ids again on the new primary',
        30_000,
        () => JSON.stringify({ lost: [...claims.lost], regained: [...claims.regained] }),
      );
      gates.late.resolve();
      expect(await Promise.all(handles.map((handle) => handle.result()))).toEqual(
        handles.map(() => 'done'),
      );
      // C's executions: taken over by A or B once C's claim stayed gone, then finished there.
      const reader = await openPostgres({ connectionString: hostList, schema });
      opened.push(reader);
      const finished = async (id: string) =>
        (await reader.events.read(id)).some((event) => event.type === 'execution.completed');
      await until(
        async () => (await Promise.all(ids.c.map(finished))).every(Boolean),
        "the dead node C's executions to finish on A or B",
        30_000,
      );

      // Neither live node drove the other's: an effect that waited out the failover ran once,
      // one that finished inside it ran again at most on its own node; no peer resumed any.
      for (const [owner, mine] of [
        ['node-a', ids.a],
        ['node-b', ids.b],
      ] as const) {
        for (const id of mine) {
          const by = (resumedBy.get(id) ?? []).filter((nodeId) => nodeId !== owner);
          const runs = effectRuns.get(id);
          expect({ id, peers: by, once: early.includes(id) || runs === 1 }).toEqual({
            id,
            peers: [],
            once: true,
          });
        }
      }
      for (const id of ids.c) {
        const by = resumedBy.get(id) ?? [];
        expect(by.length).toBeGreaterThan(0);
        expect(by.every((nodeId) => nodeId === 'node-a' || nodeId === 'node-b')).toBe(true);
      }
      expect(claims.lost.get('node-a')).toBe(1);
      expect(claims.lost.get('node-b')).toBe(1);
      expect(claims.regained.get('node-c')).toBeUndefined();
      expect(await a.health()).toEqual({
        ready: true,
        store: { reachable: true },
        nodeClaim: 'held',
        shuttingDown: false,
      });
      expect((await c.health({ timeoutMs: 2_000 })).ready).toBe(false);
      for (const id of all) expect((await reader.events.verify(id)).ok).toBe(true);
      expect(await serverPort(reader)).toBe(pair.standbyPort);

      // The observer's LISTEN moved to the new primary: it heard appends made there, with no poll.
      await until(
        () =>
          heard.some(
            (event, index) => index >= heardBefore && event.type === 'execution.completed',
          ),
        'the subscription (no polling) to hear completions appended on the new primary',
        20_000,
        () =>
          `heard ${heard.length} (${heardBefore} before), error ${String(subscriptionError)}, ` +
          `listener ${listenerProcessId(observer)} (was ${listenerBefore})`,
      );
      expect(subscriptionError).toBeUndefined();
      const listenerAfter = listenerProcessId(observer);
      expect(listenerAfter).toBeDefined();
      expect(listenerAfter).not.toBe(listenerBefore);
      const onNewPrimary = await reader.events.connectionPool.query(
        'SELECT 1 FROM pg_stat_activity WHERE pid = $1',
        [listenerAfter],
      );
      expect(onNewPrimary.rowCount).toBe(1);
    } finally {
      open();
      await subscription.close();
      await observer.close();
      await Promise.all(runtimes.slice(0, 2).map((runtime) => runtime.shutdown()));
      // C cannot reach anything: its shutdown is not waited on past its own timers.
      void runtimes[2]?.shutdown().catch(() => undefined);
      await Promise.all(opened.slice(0, 2).map((backend) => backend.close()));
      for (const backend of opened.slice(3)) await backend.close();
      await forwarder.close();
    }
  });
});
