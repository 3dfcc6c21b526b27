// The demo's approver: a separate process, as a person's tool would be. It opens the same
// SQLite log, reads the run's pending approval and approves exactly the request it read (bound
// by its hash). It runs no agent: the worker that drives the run picks the decision up.
import { createRuntime } from '@loom/workflow-runtime';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import { createAgentRuntime } from '../src/index.js';
import { demoSettingsFrom } from './demo-settings.js';
import { demoRunId } from './support-agent.js';

const settings = demoSettingsFrom(process.env as Record<string, string | undefined>);
const print = (line: string) => process.stdout.write(`${line}\n`);

// timerPollMs 0: this process resumes nothing, it only decides.
const flows = createRuntime({ backend: openSqlite({ path: settings.db }), timerPollMs: 0 });
const agents = createAgentRuntime({ flows, agents: [] });
const pending = (await agents.approvals(demoRunId)).find((a) => a.status === 'pending');
if (pending === undefined) {
  print(`no approval of run ${demoRunId} is pending`);
  await flows.shutdown();
  process.exit(1);
}
print(
  `pending: ${pending.id} ${pending.request.tool} ${JSON.stringify(pending.request.input)} (request hash ${pending.requestHash.slice(0, 12)}…)`,
);
await agents.approve(pending.id, {
  by: 'ana@example.com',
  note: 'customer verified, parcel lost',
  requestHash: pending.requestHash,
});
print(`approved by ana@example.com from this process (pid ${process.pid})`);
await flows.shutdown();
