// Many runs for P15 (the query-count test and the benchmark): one real `order` run and one real
// agent run waiting for approval are recorded by the runtimes, then each log is copied under new
// ids (the run id substituted everywhere in it, approval ids included) through the kernel's append.
import type { Backend, EventEnvelope, ExecutionSummary, JsonValue } from '@loom/event-runtime';
import { indexRow } from '../src/internal/index-row.js';
import { eventually, mailer, order, runtimeOn } from './fixture.js';

/** The ids `seedRuns` writes: `run-00000` … in id order, every other one an agent run. */
export const seededRunId = (i: number) => `run-${String(i).padStart(5, '0')}`;

/**
 * Writes `runs` runs on `backend` (and closes it): the even ones completed `order` runs (2 steps), the odd ones
 * `mailer` agent runs each waiting for one approval (`runs / 2` waiting approvals).
 */
export async function seedRuns(backend: Backend, runs: number): Promise<void> {
  const running = runtimeOn(backend);
  try {
    await (
      await running.flows.start(order, { id: 'seed' }, { executionId: 'seed-order' })
    ).result();
    await running.agents.start(mailer, 'mail ana', { runId: 'seed-agent' });
    await eventually(async () => {
      const row = await indexRow(backend.events, 'seed-agent');
      return row.status === 'suspended' ? true : undefined;
    }, 'seed-agent waiting for approval');
    await running.flows.idle();
  } catch (error) {
    await running.flows.shutdown();
    throw error;
  }
  const templates = new Map<string, { row: ExecutionSummary; events: EventEnvelope[] }>();
  for (const id of ['seed-order', 'seed-agent']) {
    const row = await indexRow(backend.events, id);
    const events = (await backend.events.read(id)).map(({ sequence, type, payload, at }) => ({
      executionId: id,
      sequence,
      type,
      payload,
      at,
    }));
    templates.set(id, { row, events });
  }
  const batch: Promise<unknown>[] = [];
  for (let i = 0; i < runs; i += 1) {
    const id = seededRunId(i);
    const template = templates.get(i % 2 === 0 ? 'seed-order' : 'seed-agent');
    if (template === undefined) throw new Error('no template');
    const from = template.row.executionId;
    const events = template.events.map((event) => ({
      ...event,
      executionId: id,
      payload: JSON.parse(JSON.stringify(event.payload).replaceAll(from, id)) as JsonValue,
    }));
    batch.push(
      backend.events.append(events, {
        status: template.row.status,
        ...(template.row.status === 'suspended' ? { wakeAtMs: template.row.wakeAtMs } : {}),
      }),
    );
    if (batch.length >= 50) await Promise.all(batch.splice(0));
  }
  await Promise.all(batch);
  await running.flows.shutdown(); // closes `backend`
}
