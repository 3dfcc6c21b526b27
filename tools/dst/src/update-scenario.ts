// The updates scenario (ADR 0061): executions that take updates and answer each, driven on 3
// nodes under the simulator's faults, while clients send each update (some twice under one id,
// and again after no answer in time) through any node and wait for the answer.
import type { StoredEvent } from '@loom/event-runtime';
import { defineFlow, defineUpdate } from '@loom/workflow-runtime';
import type { SimFlow } from './runtime-adapter.js';
import { type Scenario, startAt } from './scenario.js';
import type { SimWorld, Violation } from './sim-world.js';

/** Adds `n` to the execution's total; answered with the total and how many updates it took. */
export const bump = defineUpdate<{ n: number }, { total: number; taken: number }>('bump');

/** Takes `input.updates` updates, applies each in a step that takes a while, answers each. */
export const updateFlow = defineFlow(
  { name: 'dst.update' },
  async (ctx, input: { updates: number }) => {
    let total = 0;
    for (let taken = 1; taken <= input.updates; ) {
      const request = await ctx.waitForUpdate(bump);
      if (!request.received) continue;
      total += await ctx.step(`apply-${request.updateId}`, async (effect) => {
        await new Promise<void>((resolve) => effect.clock.setTimer(resolve, 50 + taken * 37));
        return request.arg.n;
      });
      await request.answer({ total, taken });
      taken++;
    }
    return total;
  },
);

/** What one seed sent, and every answer a client got, by update id. */
interface UpdatePlan {
  /** Update id → its execution. */
  executions: Map<string, string>;
  answers: Map<string, string[]>;
}
const plannedBy = new WeakMap<SimWorld, UpdatePlan>();

const executionsMax = 3;
const updatesPerExecution = 2;

export const updateScenario: Scenario = {
  name: 'updates',
  horizonMs: 90_000,
  nodes: 3,
  boot: () => ({ flows: [updateFlow as unknown as SimFlow], queues: [] }),
  drive(world: SimWorld) {
    const random = world.random.fork('updates');
    const plan: UpdatePlan = { executions: new Map(), answers: new Map() };
    plannedBy.set(world, plan);
    for (let index = 0; index < executionsMax; index++) {
      const executionId = `update-${index}`;
      const startMs = random.int(20_000);
      startAt(
        world,
        startMs,
        updateFlow as unknown as SimFlow,
        { updates: updatesPerExecution },
        executionId,
      );
      for (let update = 0; update < updatesPerExecution; update++) {
        const updateId = `${executionId}:u-${update}`;
        plan.executions.set(updateId, executionId);
        plan.answers.set(updateId, []);
        const send = (atMs: number) =>
          world.clock.setTimer(() => {
            void world.client.retryAny(
              `update ${updateId}`,
              async (node) => {
                const answer = await node.runtime.update(
                  bump as never,
                  executionId,
                  { n: index * 10 + update + 1 },
                  updateId,
                );
                plan.answers.get(updateId)?.push(JSON.stringify(answer));
              },
              // Sent before its execution's start landed: call again.
              (error) =>
                (error as { code?: unknown })?.code === 'EXECUTION_NOT_FOUND' ? 'retry' : undefined,
            );
          }, atMs);
        const atMs = startMs + random.between(100, 20_000);
        send(atMs);
        if (random.chance(0.5)) send(atMs + random.int(10_000));
      }
    }
  },
  mustSettle: () => Array.from({ length: executionsMax }, (_, index) => `update-${index}`),
  check: async (world, log) => answeredOnce(plannedBy.get(world), log),
  stats: async (world) => {
    const plan = plannedBy.get(world);
    let answers = 0;
    for (const got of plan?.answers.values() ?? []) answers += got.length;
    return { updatesAnswered: answers };
  },
};

/**
 * `update-answered-once`: every update sent has exactly one answer in its execution's log, was
 * taken exactly once (one `signal.received` carrying its id), and every answer a client got for
 * it is that one.
 */
function answeredOnce(plan: UpdatePlan | undefined, log: readonly StoredEvent[]): Violation[] {
  if (plan === undefined) return [];
  const violations: Violation[] = [];
  const logged = new Map<string, string[]>();
  const taken = new Map<string, number>();
  for (const event of log) {
    const payload = event.payload as {
      name?: string;
      result?: unknown;
      payload?: { updateId?: unknown };
    } | null;
    if (event.type === 'step.completed' && payload?.name?.startsWith('loom.update:')) {
      const updateId = payload.name.slice('loom.update:'.length);
      logged.set(updateId, [...(logged.get(updateId) ?? []), JSON.stringify(payload.result)]);
    }
    const takenId = payload?.payload?.updateId;
    if (event.type === 'signal.received' && typeof takenId === 'string') {
      taken.set(takenId, (taken.get(takenId) ?? 0) + 1);
    }
  }
  for (const [updateId, executionId] of plan.executions) {
    const answers = logged.get(updateId) ?? [];
    const violation = (detail: string) =>
      violations.push({
        invariant: 'update-answered-once',
        detail: `${updateId}: ${detail}`,
        executionId,
      });
    if (answers.length !== 1) violation(`answered ${answers.length} times in the log, want 1`);
    if (taken.get(updateId) !== 1) violation(`taken ${taken.get(updateId) ?? 0} times, want 1`);
    for (const got of plan.answers.get(updateId) ?? []) {
      if (got !== answers[0]) violation(`a client got ${got}, the log answered ${answers[0]}`);
    }
    if ((plan.answers.get(updateId) ?? []).length === 0) violation('no client got an answer');
  }
  return violations;
}
