import { callOfEvent } from '@loom/agent-loop';
import { currentProjectionsOf, type View } from '../open-view.js';
import type { RunSummary } from '../run-summary.js';
import type { Spend } from './projections.js';

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
