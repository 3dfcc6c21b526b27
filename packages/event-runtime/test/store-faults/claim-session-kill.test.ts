// A node whose claim session alone dies is not taken for dead: two live runtimes on one Postgres
// schema, pg_terminate_backend of node A's claim session (its advisory lock in pg_locks) while
// A's executions are inside a plain effect, and peer B recovering every 20 ms. A must report the
// loss and claim its id again, and B must take none of A's executions over: each effect runs
// exactly once (counted per execution). Once with A's executions unleased (lazy), once leased.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { migrate, PostgresEventStore } from '../../src/postgres.js';
import { until } from '../../src/testing.js';
import { pgTestUrl, useThrowawaySchemas } from '../support/throwaway-schemas.js';

const db = useThrowawaySchemas();
const execs = 20;

/** The backends of `appName` that hold an advisory lock: a node's claim session. */
async function claimSessions(appName: string): Promise<number[]> {
  const rows = await db.admin.query(
    `SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = $1`,
    [appName],
  );
  return rows.rows.map((row) => row.pid as number);
}

for (const leaseMode of ['lazy', 'eager'] as const) {
  describe(`a node's claim session killed while it lives (${leaseMode} leases)`, () => {
    it('the peer takes none of its executions; the loss is reported and the claim comes back', async () => {
      const schema = db.freshSchema();
      await migrate({ connectionString: pgTestUrl, schema });
      const apps = {
        a: `loom_claim_a_${randomBytes(3).toString('hex')}`,
        b: `loom_claim_b_${randomBytes(3).toString('hex')}`,
      };
      const runs = new Map<string, number>();
      let open: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const flow: Flow<null, string> = {
        name: 'claim-effect',
        run: async (ctx) =>
          ctx.step('effect', async () => {
            runs.set(ctx.executionId, (runs.get(ctx.executionId) ?? 0) + 1);
            await gate;
            return 'done';
          }),
      };
      const storeA = await PostgresEventStore.open({
        connectionString: `${pgTestUrl}?application_name=${apps.a}`,
        schema,
      });
      const storeB = await PostgresEventStore.open({
        connectionString: `${pgTestUrl}?application_name=${apps.b}`,
        schema,
      });
      const errorsA: string[] = [];
      const a = createKernelRuntime({
        store: storeA,
        flows: [flow as Flow<never, unknown>],
        leaseMode,
        onError: (error) => errorsA.push(String((error as { code?: string }).code ?? error)),
      });
      const b = createKernelRuntime({
        store: storeB,
        flows: [flow as Flow<never, unknown>],
        recoverEveryMs: 20,
        timerPollMs: 20,
        onError: () => undefined,
      });
      const takenByB: string[] = [];
      b.events.on('execution:resumed', (event) => takenByB.push(event.executionId));
      let lost = 0;
      let claimedAgain = 0;
      a.events.on('node:claim_lost', () => lost++);
      a.events.on('node:claimed', () => claimedAgain++);
      try {
        const handles = await Promise.all(
          Array.from({ length: execs }, (_, index) =>
            a.start(flow, null, { executionId: `claim-${leaseMode}-${index}` }),
          ),
        );
        await until(() => runs.size === execs, `all ${execs} effects to start on node A`, 20_000);
        // B has looked at A's executions while A was plainly alive: it left them.
        expect(await b.recover()).toEqual([]);
        const [session, ...others] = await claimSessions(apps.a);
        expect(others).toEqual([]);
        await db.admin.query('SELECT pg_terminate_backend($1)', [session]);

        await until(
          () => claimedAgain > 0 || takenByB.length > 0,
          "node A to claim its id again (or B to take A's executions)",
          20_000,
        );
        // Rounds of B after A holds its claim again: still nothing to take.
        expect(await b.recover()).toEqual([]);
        expect(takenByB).toEqual([]);
        expect(lost).toBe(1);
        expect(claimedAgain).toBe(1);
        expect(errorsA).toContain('NODE_CLAIM_LOST');
        const again = await claimSessions(apps.a);
        expect(again).toHaveLength(1);
        expect(again[0]).not.toBe(session);

        open();
        expect(await Promise.all(handles.map((handle) => handle.result()))).toEqual(
          handles.map(() => 'done'),
        );
        expect([...runs.values()]).toEqual(handles.map(() => 1));
        expect(takenByB).toEqual([]);
      } finally {
        open();
        await Promise.all([a.shutdown(), b.shutdown()]);
        await Promise.all([storeA.close(), storeB.close()]);
      }
    }, 60_000);
  });
}
