import { currentProjectionsOf, type View } from '../open-view.js';
import type { RunSummary } from '../run-summary.js';
import type { Spend, SpendQuery, SpendRow } from './projections.js';

/** No model call: what a flow run (or an agent run before its first turn) spent. */
export const noSpend: Readonly<Spend> = {
  modelCalls: 0,
  inputTokens: 0,
  outputTokens: 0,
  costUsd: 0,
  costUnknownCalls: 0,
};

/**
 * The model spend of each listed run: from the spend projection (one query) when the view finds
 * the projection tables current (their checkpoint is the log's end), else folded from each agent
 * run's log (one paged read per agent run; flow runs make no model calls), so a projector that is
 * behind never shows an older spend than the log.
 */
export async function spendOfRuns(
  view: View,
  runs: readonly RunSummary[],
): Promise<Map<string, Spend>> {
  const out = new Map<string, Spend>(runs.map((run) => [run.id, { ...noSpend }]));
  const agentRuns = runs.filter((run) => run.kind === 'agent').map((run) => run.id);
  if (agentRuns.length === 0) return out;
  // The agent loop only for a page with agent runs.
  const { callOfEvent } = await import('@loom/agent-loop');
  const projections = await currentProjectionsOf(view);
  if (projections !== undefined) {
    for (const { key, ...spend } of await projections.spend({ by: 'run', runIds: agentRuns })) {
      out.set(key, spend);
    }
    return out;
  }
  for (const id of agentRuns) {
    const spend = { ...noSpend };
    for (const event of await view.exportLog(id)) {
      const call = callOfEvent(event);
      if (call === undefined) continue;
      spend.modelCalls += 1;
      spend.inputTokens += call.inputTokens ?? 0;
      spend.outputTokens += call.outputTokens ?? 0;
      if (call.costUsd === null) spend.costUnknownCalls += 1;
      else spend.costUsd += call.costUsd;
    }
    out.set(id, spend);
  }
  return out;
}

/** Runs listed per page while `spendFromLogs` walks the execution index. */
const runsPageSize = 500;

/**
 * `projections.spend(query)` without the projection: the same rows, folded from every agent run's
 * log (the execution index paged, one paged read of each agent run's log). What `loom spend`
 * shows when the spend projection is not initialised or is behind the log: slower on a large
 * database, never older than the log.
 *
 * Error codes: `INVALID_ARGUMENT` (a bad group or day), store errors.
 */
export async function spendFromLogs(view: View, query: SpendQuery): Promise<SpendRow[]> {
  // Imported here, not at the top: `spendOfRuns` (every `loom runs`) needs none of them on a page
  // without agent runs (the projection's module loads kysely, the agent loop its runtime).
  const [{ checkSpendQuery }, { utcDay }, { callOfEvent }] = await Promise.all([
    import('./projections.js'),
    import('./fold-batch.js'),
    import('@loom/agent-loop'),
  ]);
  checkSpendQuery(query);
  const only = query.runIds === undefined ? undefined : new Set(query.runIds);
  const groups = new Map<string, Spend>();
  for (let after: string | undefined; ; ) {
    const page = await view.runs({
      limit: runsPageSize,
      ...(query.agent === undefined ? {} : { flow: `agent:${query.agent}` }),
      ...(after === undefined ? {} : { after }),
    });
    for (const run of page.runs) {
      if (run.kind !== 'agent' || (only !== undefined && !only.has(run.id))) continue;
      for (const event of await view.exportLog(run.id)) {
        const call = callOfEvent(event);
        if (call === undefined) continue;
        const day = utcDay(event.at);
        if (query.fromDay !== undefined && day < query.fromDay) continue;
        if (query.toDay !== undefined && day > query.toDay) continue;
        const key =
          query.by === 'run'
            ? run.id
            : query.by === 'agent'
              ? (run.agent ?? '')
              : query.by === 'day'
                ? day
                : call.model;
        let spend = groups.get(key);
        if (spend === undefined) {
          spend = { ...noSpend };
          groups.set(key, spend);
        }
        spend.modelCalls += 1;
        spend.inputTokens += call.inputTokens ?? 0;
        spend.outputTokens += call.outputTokens ?? 0;
        if (call.costUsd === null) spend.costUnknownCalls += 1;
        else spend.costUsd += call.costUsd;
      }
    }
    if (page.nextCursor === undefined) break;
    after = page.nextCursor;
  }
  // As the projection orders them: the biggest cost first, then by key.
  return [...groups.entries()]
    .map(([key, spend]) => ({ key, ...spend }))
    .sort((a, b) => b.costUsd - a.costUsd || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
