// What one life of a kill-test worker does once its runtime is built, shared by the kill
// matrix's worker and the MCP kill worker: decide a pending approval if the test says so, then
// recover, start or attach the run, and report how it stands: `result …` or `approval …`.
import type { Runtime } from '@loom/workflow-runtime';
import {
  type Agent,
  type AgentRuntime,
  type Approval,
  isLoomError,
  type RunResult,
} from '../../src/index.js';

/**
 * The run's pending approval (of `kind`, when given), if any (none while the run is not in the
 * log yet).
 */
export async function pendingApproval(
  agents: AgentRuntime,
  runId: string,
  kind?: Approval['kind'],
): Promise<Approval | undefined> {
  try {
    return (await agents.approvals(runId)).find(
      (a) => a.status === 'pending' && (kind === undefined || a.kind === kind),
    );
  } catch {
    return undefined;
  }
}

/**
 * `KILL_RESOLVE` (JSON): reject the pending approval (`{kind:'reject'}`), approve it without a
 * resolution (`{kind:'plain'}`: it must be refused with RESOLUTION_REQUIRED, printed as
 * `refused <code>`), approve a `tool_call` approval (`{kind:'approve'}`), or approve it with that
 * resolution. `approvalKind`: decide the pending approval of that kind.
 */
export async function decidePending(
  agents: AgentRuntime,
  runId: string,
  resolveJson: string,
  approvalKind?: Approval['kind'],
): Promise<void> {
  const pending = await pendingApproval(agents, runId, approvalKind);
  if (pending === undefined) throw new Error('KILL_RESOLVE set but no approval is pending');
  const resolution = JSON.parse(resolveJson);
  if (resolution.kind === 'approve') {
    await agents.approve(pending.id, { by: 'kill-test', requestHash: pending.requestHash });
    return;
  }
  if (resolution.kind === 'plain') {
    try {
      await agents.approve(pending.id, { by: 'kill-test', requestHash: pending.requestHash });
    } catch (error) {
      if (!isLoomError(error, 'RESOLUTION_REQUIRED')) throw error;
      process.stdout.write(`refused ${error.code}\n`);
      return;
    }
    throw new Error('a plain approve of an interrupted call was accepted');
  }
  if (resolution.kind === 'reject') {
    await agents.reject(pending.id, { by: 'kill-test', requestHash: pending.requestHash });
  } else {
    await agents.approve(pending.id, {
      by: 'kill-test',
      resolution,
      requestHash: pending.requestHash,
    });
  }
}

/**
 * Recovers, then starts the run (or attaches to it), and returns the first of: its result, or a
 * pending approval. Throws when neither comes within 30 s.
 */
export async function liveOneLife(
  flows: Runtime,
  agents: AgentRuntime,
  agent: Agent,
  runId: string,
): Promise<string> {
  await flows.recover();
  await flows.wakeDue();
  const result = (
    await flows.status(runId).then(
      () => agents.attach(runId),
      () => agents.start(agent, 'do it', { runId }),
    )
  ).result();
  const deadline = Date.now() + 30_000;
  let outcome: string | undefined;
  void result.then((r: RunResult) => {
    outcome ??= `result ${JSON.stringify(r)}`;
  });
  while (outcome === undefined) {
    if (Date.now() > deadline) throw new Error('the run neither ended nor waited within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 25));
    const pending = await pendingApproval(agents, runId);
    if (pending !== undefined && outcome === undefined)
      outcome = `approval ${JSON.stringify(pending)}`;
  }
  return outcome;
}
