// A worker process of the demo: it opens the shared SQLite log, resumes what a dead predecessor
// left (or starts the run), and drives the run as far as it can. It prints the transcript, plus
// machine lines for the driver: `@waiting <approval>` when the run waits for a person, and
// `@result <result>` when the run ends. It never exits by itself while the run waits: the
// driver SIGKILLs it then (the first worker), or a person's approval lets the run end.
import { EventType } from '@loom/event-runtime';
import { createRuntime } from '@loom/workflow-runtime';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import {
  type AgentRun,
  type AgentTransition,
  createAgentRuntime,
  type RunResult,
} from '../src/index.js';
import {
  demoApprovalPollMs,
  demoLifeDeadlineMs,
  demoModel,
  demoSettingsFrom,
} from './demo-settings.js';
import { demoInput, demoRunId, supportAgent } from './support-agent.js';

const env = process.env as Record<string, string | undefined>;
const settings = demoSettingsFrom(env);
const print = (line: string) => process.stdout.write(`${line}\n`);

function transcript(t: AgentTransition): string {
  switch (t.type) {
    case 'decided':
      return `turn ${t.turn}: decided (the model's answer is in the log before anything acts on it)`;
    case 'policy_decided':
      return `turn ${t.turn}: policy_decided (the verdicts are in the log)`;
    case 'tool_started':
      return `turn ${t.turn}: tool_started ${t.tool} (in the log before the tool is called)`;
    case 'observed':
      return `turn ${t.turn}: observed (the results are in the log)`;
  }
}

const agent = supportAgent({
  model: demoModel(settings, env),
  refundsFile: settings.refundsFile,
  print,
});
const flows = createRuntime({
  backend: openSqlite({ path: settings.db, migrate: true }),
  // Each worker starts right after its predecessor died: recover at once, poll for decisions often.
  recoverQuietMs: 0,
  timerPollMs: 50,
});
const agents = createAgentRuntime({
  flows,
  agents: [agent],
  onTransition: (t) => print(transcript(t)),
});

const recovered = await flows.recover();
if (recovered.length > 0) print(`recovered ${recovered.join(', ')} from the log`);
const inLog = await flows.status(demoRunId).then(
  (status) => status,
  () => undefined,
);
let run: AgentRun;
if (inLog === undefined) {
  print(`starting run ${demoRunId}: ${JSON.stringify(demoInput)}`);
  run = await agents.start(agent, demoInput, { runId: demoRunId });
} else {
  print(
    `run ${demoRunId} is in the log (${inLog === 'running' ? 'not ended' : inLog}); attaching to it: nothing already recorded runs again`,
  );
  run = agents.attach(demoRunId);
}

let ended: { result: RunResult } | { error: unknown } | undefined;
run.result().then(
  (result) => {
    ended = { result };
  },
  (error: unknown) => {
    ended = { error };
  },
);

const deadline = Date.now() + demoLifeDeadlineMs;
let announced = false;
while (ended === undefined) {
  if (Date.now() > deadline) {
    print(`the run neither ended nor waited within ${demoLifeDeadlineMs} ms`);
    process.exit(1);
  }
  await new Promise((resolve) => setTimeout(resolve, demoApprovalPollMs));
  if (announced || ended !== undefined) continue;
  const pending = (await agents.approvals(demoRunId)).find((a) => a.status === 'pending');
  // Announced once the run is suspended (its last event), so it truly holds no lease when the
  // driver kills this process or a person decides.
  const last = (await flows.store.read(demoRunId)).at(-1)?.type;
  if (pending === undefined || last !== EventType.executionSuspended || ended !== undefined)
    continue;
  announced = true;
  print(
    `the run ${inLog === undefined ? '' : 'still '}waits for a person: ${pending.request.tool} ${JSON.stringify(pending.request.input)} is ${pending.request.sideEffect} (${pending.reason}); it holds no lease while it waits`,
  );
  print(`@waiting ${JSON.stringify(pending)}`);
}
await flows.shutdown();
if ('error' in ended) {
  print(`the run failed: ${String(ended.error)}`);
  process.exit(1);
}
print(`@result ${JSON.stringify(ended.result)}`);
process.exit(0);
