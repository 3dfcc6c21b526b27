// Failover one layer up (issue 32, item 1): agents with a non-idempotent tool, queued flows and a
// schedule, driven by two `loom worker --flows failover-flows.ts` processes on the multi-host URL
// of a primary and a synchronous standby under pg_auto_failover (the kernel campaign's harness,
// packages/event-runtime/test/failover/failover-cluster.ts, imported by path: it is no public
// API). The model is a local chat-completions server in this process. This process is also the
// application (a runtime that runs nothing, `handOffStarts`: it starts agent runs and enqueues
// items, each retried with its own id until acknowledged) and the person (it resolves every
// interrupted `charge` call from the charges log, as someone reading the payment system would).
// The primary is SIGKILLed once part of the work has ended. Then: every acknowledged run and item
// ended once, no charge ran twice, each interrupted call was resolved by the person, the
// schedule fired every second across the failover exactly once, every log verifies, and both
// workers drain and exit 0 when told to. `scripts/ensure-failover.sh` installs pg_auto_failover.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentFlowName, createAgentRuntime } from '@loom/agent-loop';
import type { StoredEvent } from '@loom/event-runtime';
import { killTestProcesses, spawnTestProcess, type TestProcess } from '@loom/event-runtime/testing';
import { createRuntime, type Runtime } from '@loom/workflow-runtime';
import { openPostgres, type PostgresBackend } from '@loom/workflow-runtime/postgres';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type FailoverCluster,
  type Promotion,
  startFailoverCluster,
  waitUntil as until,
} from '../../../event-runtime/test/failover/failover-cluster.js';
import {
  commitAfter,
  waitForWritable,
} from '../../../event-runtime/test/failover/failover-hosts.js';
import { ChatCompletionsServer } from '../../demo/chat-completions-server.test-support.js';
import { failoverJob, failoverTick, payer } from './failover-flows.js';

const loomBin = fileURLToPath(new URL('../../../view/dist/bin.js', import.meta.url));
const flowsModule = fileURLToPath(new URL('./failover-flows.ts', import.meta.url));
const directory = mkdtempSync(join(tmpdir(), 'loom-agent-failover-'));
const schema = 'loom_agent_failover';
const queue = 'failover-jobs';
const scheduleName = 'failover-tick';
/** Agent runs and queue items, one of each submitted every `submitEveryMs`. */
const runs = 16;
const submitEveryMs = 300;
/** The kill comes once this many runs and items have ended and the schedule fired this often. */
const endedBeforeKill = 4;
const ticksBeforeKill = 3;
/** From the kill: every acknowledged run and item must have ended within this. */
const settleMs = 40_000;
const terminalTypes = ['execution.completed', 'execution.failed', 'execution.cancelled'];
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** When a schedule's run was due: its id is `cron:<name>:<epoch ms>`. */
const firedAt = (runId: string) => Number(runId.slice(`cron:${scheduleName}:`.length));

/** `work`, again while it throws (the store is failing over), until it succeeds or 60 s pass. */
async function acknowledged<T>(work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await work();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await pause(200);
    }
  }
}

const linesOf = (file: string) =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
/** charges.log: idempotency key → the outputs of each run of `charge` under it. */
function charges(): Map<string, string[]> {
  const byKey = new Map<string, string[]>();
  for (const line of linesOf(join(directory, 'charges.log'))) {
    const [key, , output] = line.split(' ', 3) as [string, string, string];
    byKey.set(key, [...(byKey.get(key) ?? []), output]);
  }
  return byKey;
}

let cluster: FailoverCluster | undefined;
let model: ChatCompletionsServer | undefined;
let backend: PostgresBackend | undefined;
let app: Runtime | undefined;
const workers: TestProcess[] = [];

afterAll(async () => {
  await killTestProcesses();
  await app?.shutdown().catch(() => undefined);
  await backend?.close().catch(() => undefined);
  await model?.close();
  await cluster?.stop();
  rmSync(directory, { recursive: true, force: true });
});

/** What the campaign saw, filled in as it goes. */
const seen = {
  /** Per submission: acknowledged when (epoch ms). */
  runAcks: new Map<string, number>(),
  itemAcks: new Map<string, number>(),
  killAtMs: 0,
  promotion: undefined as Promotion | undefined,
  firstCommitAfterKillMs: null as number | null,
  lastEndedAfterKillMs: null as number | null,
  /** Kill → the schedule fired an occurrence due after the promotion. */
  scheduleBackAfterKillMs: null as number | null,
  /** The person's decisions: approval id → what the charges log said then. */
  decisions: new Map<string, { key: string; resolution: 'record' | 'rerun' }>(),
  personErrors: 0,
};

describe('failover with agents, queues and a schedule under pg_auto_failover', () => {
  it('a primary and a synchronous standby come up under the manager', async () => {
    cluster = await startFailoverCluster({ log: (line) => console.log(line) });
    expect((await cluster.primary()).name).toBe('node1');
  });

  let submitted: Promise<void> | undefined;
  let person: Promise<void> | undefined;
  let stopPerson = false;

  it('two loom workers on the multi-host URL run agents, queue items and a schedule; the primary is SIGKILLed mid-campaign and the manager promotes the standby', async () => {
    const running = cluster as FailoverCluster;
    const url = running.multiHostUrl;
    // The model: looks the order up, charges it, then says so; each answer takes a moment.
    model = await ChatCompletionsServer.start({
      move: async (body) => {
        await pause(100);
        const messages = body.messages ?? [];
        const order = Number(/order (\d+)/.exec(JSON.stringify(messages))?.[1]);
        const results = messages.filter((m) => (m as { role?: string }).role === 'tool').length;
        if (results === 0) return { tool: 'lookup_order', input: { order } };
        if (results === 1) return { tool: 'charge', input: { order } };
        return { text: `Charged order ${order}.` };
      },
    });
    for (const file of ['charges.log', 'effects.log']) writeFileSync(join(directory, file), '');
    backend = await openPostgres({ connectionString: url, schema, migrate: true });
    const setup = new pg.Client({ connectionString: await waitForWritable(url, 10_000) });
    await setup.connect();
    await setup.query(
      `CREATE TABLE "${schema}".failover_side (kind text NOT NULL, id text NOT NULL)`,
    );
    await setup.end();

    const worker = (slot: number) =>
      spawnTestProcess(loomBin, {
        nodeArgs: [],
        args: [
          'worker',
          '--db',
          `${url}&schema=${schema}`,
          '--flows',
          flowsModule,
          '--queues',
          queue,
          '--concurrency',
          '4',
          '--poll',
          '100',
        ],
        env: {
          LOOM_OPENAI_BASE_URL: model?.baseUrl,
          LOOM_FAILOVER_DIR: directory,
          LOOM_FAILOVER_SCHEMA: schema,
        },
        name: `loom worker ${slot + 1}`,
        deadlineMs: 180_000,
      });
    workers.push(worker(0), worker(1));
    await Promise.all(workers.map((w) => w.line('loom: worker ', 30_000)));

    // The application: runs nothing here (handOffStarts), takes nothing back.
    app = createRuntime({
      backend,
      flows: [failoverJob, failoverTick],
      handOffStarts: true,
      timerPollMs: 0,
      recoverEveryMs: 0,
    });
    const agents = createAgentRuntime({ flows: app, agents: [payer] });
    await acknowledged(() =>
      (app as Runtime).schedule(failoverTick, '* * * * * *', {
        name: scheduleName,
        overlap: 'allow',
        catchUp: 'all',
      }),
    );
    submitted = (async () => {
      for (let index = 0; index < runs; index++) {
        const runId = `pay-${index}`;
        const itemId = `job-${index}`;
        await Promise.all([
          acknowledged(() => agents.start(payer, `Charge order ${index}.`, { runId })).then(() =>
            seen.runAcks.set(runId, Date.now()),
          ),
          acknowledged(() =>
            (app as Runtime).enqueue(queue, failoverJob, { index }, { itemId }),
          ).then(() => seen.itemAcks.set(itemId, Date.now())),
        ]);
        await pause(submitEveryMs);
      }
    })();
    submitted.catch(() => undefined);

    // The person: an interrupted charge is recorded as it happened when the charges log has it,
    // and re-run when it does not (the card was never charged).
    person = (async () => {
      while (!stopPerson) {
        try {
          const page = await (app as Runtime).findExecutions({
            flow: agentFlowName(payer),
            status: 'suspended',
            limit: 1_000,
          });
          for (const execution of page.executions) {
            for (const approval of await agents.approvals(execution.id)) {
              if (approval.status !== 'pending' || approval.kind !== 'interrupted_side_effect')
                continue;
              // The approval is `<runId>~<turn>.<call>.i` (`.r<n>.i` after a re-run): the
              // call's idempotency key is `<runId>/<turn>.<call>` for every attempt.
              const call = approval.id
                .slice(approval.id.lastIndexOf('~') + 1)
                .replace(/\.i$/, '')
                .replace(/\.r\d+$/, '');
              const key = `${approval.runId}/${call}`;
              const ran = charges().get(key)?.[0];
              const resolution =
                ran === undefined
                  ? ({ kind: 'rerun' } as const)
                  : ({ kind: 'record', output: JSON.parse(ran) } as const);
              await agents.approve(approval.id, {
                by: 'person@example.com',
                requestHash: approval.requestHash,
                resolution,
              });
              seen.decisions.set(approval.id, { key, resolution: resolution.kind });
            }
          }
        } catch {
          seen.personErrors += 1; // The store is failing over: look again.
        }
        await pause(250);
      }
    })();

    const ended = async (flow: string) =>
      (await (app as Runtime).findExecutions({ flow, status: 'settled', limit: 1_000 })).executions
        .length;
    await until(
      async () => {
        for (const w of workers)
          if (w.exited()) throw new Error(`${w.name} exited:\n${w.output().slice(-4_000)}`);
        return (await ended(agentFlowName(payer))) >= endedBeforeKill &&
          (await ended(failoverJob.name)) >= endedBeforeKill &&
          (await ended(failoverTick.name)) >= ticksBeforeKill
          ? true
          : undefined;
      },
      `${endedBeforeKill} agent runs and queue items and ${ticksBeforeKill} ticks ended before the kill`,
      30_000,
    );
    const kill = await running.killPrimary();
    seen.killAtMs = kill.atMs;
    console.log(
      `killed ${kill.node.name}: ${seen.runAcks.size} runs and ${seen.itemAcks.size} items acknowledged so far`,
    );
    // The first commit after the kill, on whichever server has it.
    const firstCommit = until(
      async () => ((await commitAfter(url, schema, kill.atMs)) ? Date.now() : undefined),
      'a commit after the kill',
      settleMs,
      50,
    ).then((at) => {
      seen.firstCommitAfterKillMs = at - kill.atMs;
    });
    firstCommit.catch(() => undefined);
    seen.promotion = await running.waitForPromotion(kill.node, kill.atMs, 45_000);
    expect(seen.promotion.node).not.toBe(kill.node);
    await firstCommit;
  });

  it('the workers reach the new primary by themselves: nothing lost, nothing twice, no charge re-run without a person, every fire once', async () => {
    if (app === undefined || backend === undefined || submitted === undefined)
      throw new Error('no campaign (see above)');
    const flows = app;
    const events = backend.events;
    await submitted;
    const ticks = async () => {
      const all = [];
      let cursor: string | undefined;
      do {
        const page = await flows.findExecutions({
          flow: failoverTick.name,
          limit: 1_000,
          ...(cursor === undefined ? {} : { cursor }),
        });
        all.push(...page.executions);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      return all;
    };
    // Every acknowledged run and item ends, through the person where a charge was interrupted.
    await until(
      async () => {
        for (const w of workers)
          if (w.exited()) throw new Error(`${w.name} exited:\n${w.output().slice(-4_000)}`);
        const settled = async (flow: string) =>
          (await flows.findExecutions({ flow, status: 'settled', limit: 1_000 })).executions.length;
        return (await settled(agentFlowName(payer))) >= runs &&
          (await settled(failoverJob.name)) >= runs
          ? true
          : undefined;
      },
      'every acknowledged agent run and queue item ended',
      Math.max(1_000, seen.killAtMs + settleMs - Date.now()),
    ).catch(async (error: Error) => {
      // Which ones, where they stand and what the workers said: the failure's evidence.
      const open = [];
      for (const flow of [agentFlowName(payer), failoverJob.name]) {
        for (const status of ['running', 'suspended'] as const) {
          const page = await flows.findExecutions({ flow, status, limit: 1_000 });
          for (const e of page.executions) {
            const log = await events.read(e.id);
            open.push(
              `${e.id} ${status} wake ${e.wakeAtMs === null ? '-' : e.wakeAtMs - Date.now()} ms, last ${log
                .slice(-4)
                .map((event) => `${event.type}@${event.at - seen.killAtMs}`)
                .join(' ')}`,
            );
          }
        }
      }
      const said = workers.map((w) => `${w.name}:\n${w.stderr().slice(-3_000)}`).join('\n');
      throw new Error(`${error.message}\nnot ended:\n${open.join('\n')}\n${said}`);
    });
    seen.lastEndedAfterKillMs = Date.now() - seen.killAtMs;
    // The schedule carries on by itself: an occurrence due after the promotion fires (the one
    // execution driving the schedule resumes after the store's backoff, up to 5 s a step).
    const promotedAtMs = seen.promotion?.reportedAtMs ?? Number.POSITIVE_INFINITY;
    await until(
      async () => ((await ticks()).some((t) => firedAt(t.id) > promotedAtMs) ? true : undefined),
      'the schedule firing an occurrence due after the promotion',
      20_000,
    );
    seen.scheduleBackAfterKillMs = Date.now() - seen.killAtMs;
    await acknowledged(() => flows.unschedule(scheduleName));
    stopPerson = true;
    await person;
    await until(
      async () =>
        (await ticks()).every((t) => t.status !== 'running' && t.status !== 'suspended')
          ? true
          : undefined,
      'every fired tick ended',
      10_000,
    );
    // Both workers drain and exit 0 when told to.
    for (const w of workers) w.child.kill('SIGTERM');
    const exits = await Promise.all(workers.map((w) => w.ended(30_000)));
    const storeErrors = exits.map((end) => (end.stderr.match(/^loom: worker: /gm) ?? []).length);
    // What the workers reported, by kind (the message up to its first digit or quote).
    for (const [slot, end] of exits.entries()) {
      const kinds = new Map<string, number>();
      for (const line of end.stderr.split('\n').filter(Boolean)) {
        const kind = line.slice(0, 140).replace(/["'\d].*$/, '');
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      }
      console.log(
        `worker ${slot + 1} reported:\n${[...kinds].map(([kind, n]) => `  ${n} × ${kind}`).join('\n')}`,
      );
    }
    const lastEnded = async (flow: string) => {
      const page = await flows.findExecutions({ flow, status: 'settled', limit: 1_000 });
      return Math.max(...page.executions.map((e) => e.updatedAtMs)) - seen.killAtMs;
    };
    console.log(
      `last agent run ended +${await lastEnded(agentFlowName(payer))} ms, last queue item +${await lastEnded(failoverJob.name)} ms after the kill`,
    );

    // What the log says.
    const terminalsOf = (log: StoredEvent[]) => log.filter((e) => terminalTypes.includes(e.type));
    const agentsView = createAgentRuntime({ flows, agents: [payer] });
    const byKey = charges();
    const runEndings: string[] = [];
    const chargesPerRun: number[] = [];
    const unverified: string[] = [];
    for (const runId of seen.runAcks.keys()) {
      const log = await events.read(runId);
      const result = await agentsView.attach(runId).result();
      runEndings.push(`${terminalsOf(log).length} ${result.reason}`);
      chargesPerRun.push(
        [...byKey.entries()]
          .filter(([key]) => key.startsWith(`${runId}/`))
          .reduce((sum, [, outputs]) => sum + outputs.length, 0),
      );
    }
    const itemEndings: string[] = [];
    for (const itemId of seen.itemAcks.keys()) {
      const log = await events.read(`queue:${queue}:${itemId}`);
      const ends = terminalsOf(log);
      const index = Number(itemId.slice('job-'.length));
      const output = (ends[0]?.payload as { output?: unknown } | undefined)?.output;
      itemEndings.push(`${ends.length} ${ends[0]?.type} ${output === index * 2 + 1}`);
    }
    const stats = await flows.queueStats(queue);
    const side = new pg.Client({
      connectionString: await waitForWritable(cluster?.multiHostUrl as string, 10_000),
    });
    await side.connect();
    const rows = (
      await side.query<{ kind: string; id: string; n: number }>(
        `SELECT kind, id, count(*)::int AS n FROM "${schema}".failover_side GROUP BY kind, id`,
      )
    ).rows;
    const everyId = (
      await side.query<{ execution_id: string }>(
        `SELECT DISTINCT execution_id FROM "${schema}".events ORDER BY execution_id`,
      )
    ).rows.map((row) => row.execution_id);
    await side.end();
    for (const id of everyId) if (!(await events.verify(id)).ok) unverified.push(id);
    const fired = (await ticks()).map((t) => firedAt(t.id));
    fired.sort((a, b) => a - b);
    const gaps = fired.slice(1).filter((at, i) => at - (fired[i] as number) !== 1_000);
    const tickEndings: string[] = [];
    for (const at of fired) {
      const log = await events.read(`cron:${scheduleName}:${at}`);
      tickEndings.push(`${terminalsOf(log).length} ${terminalsOf(log)[0]?.type}`);
    }
    const sideRows = (kind: string) => rows.filter((row) => row.kind === kind);
    const plainReruns =
      linesOf(join(directory, 'effects.log')).length -
      new Set(linesOf(join(directory, 'effects.log'))).size;
    const recorded = [...seen.decisions.values()].filter((d) => d.resolution === 'record').length;
    const promotedMs = (seen.promotion?.reportedAtMs ?? 0) - seen.killAtMs;
    console.log(
      `agent failover campaign: ${runs} agent runs, ${runs} queue items, ${fired.length} schedule fires ` +
        `(${fired.filter((at) => at > seen.killAtMs && at < (seen.promotion?.reportedAtMs ?? 0)).length} due during the outage); ` +
        `monitor promoted ${seen.promotion?.node.name} ${promotedMs} ms after the kill; kill → first commit ` +
        `${seen.firstCommitAfterKillMs} ms, kill → last run ended ${seen.lastEndedAfterKillMs} ms, kill → schedule firing again ${seen.scheduleBackAfterKillMs} ms; ` +
        `charges re-run without a person ${chargesPerRun.filter((n) => n > 1).length}, interrupted charges ` +
        `resolved by the person ${seen.decisions.size} (${recorded} recorded, ${seen.decisions.size - recorded} re-run); ` +
        `plain-step re-runs ${plainReruns}; store errors per worker ${storeErrors.join('/')}; ` +
        `${everyId.length} logs verified, ${unverified.length} failed`,
    );

    expect(exits.map((end) => end.code)).toEqual([0, 0]);
    expect(exits.every((end) => /loom: worker \S+ drained/.test(end.stdout))).toBe(true);
    // 0 acknowledged runs lost or ended twice; each completed its goal.
    expect(seen.runAcks.size).toBe(runs);
    expect(runEndings).toEqual(Array(runs).fill('1 goal_completed'));
    // The charge: exactly one real run per agent run, never a second without a person.
    expect(chargesPerRun).toEqual(Array(runs).fill(1));
    for (const decision of seen.decisions.values())
      expect(byKey.get(decision.key)?.length, decision.key).toBe(1);
    // 0 queue items lost or run twice to completion; each transaction's row once.
    expect(seen.itemAcks.size).toBe(runs);
    expect(itemEndings).toEqual(Array(runs).fill('1 execution.completed true'));
    expect(stats).toMatchObject({ depth: 0, claimed: 0, completed: runs, failed: 0, cancelled: 0 });
    expect(sideRows('job').map((row) => row.n)).toEqual(Array(runs).fill(1));
    // The schedule: one run per second from the first fire to the last, across the outage.
    expect(fired.length).toBeGreaterThan(ticksBeforeKill);
    expect(fired[0]).toBeLessThan(seen.killAtMs);
    expect(fired.at(-1)).toBeGreaterThan(seen.promotion?.reportedAtMs ?? Number.POSITIVE_INFINITY);
    expect(gaps).toEqual([]);
    expect(tickEndings).toEqual(Array(fired.length).fill('1 execution.completed'));
    expect(sideRows('tick').length).toBe(fired.length);
    expect(sideRows('tick').every((row) => row.n === 1)).toBe(true);
    expect(unverified).toEqual([]);
    expect(seen.firstCommitAfterKillMs).not.toBeNull();
  });
});
