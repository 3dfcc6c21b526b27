// A worker process of the per-key concurrency test: works queue 'tenants' with the flow of
// tenant-flow.ts until the test SIGKILLs it. argv: <sqlite:path | postgres:schema>
import { startWorker } from '../../src/index.js';
import { openTarget, recorderOf, tenantFlow } from './tenant-flow.js';

const [target] = process.argv.slice(2) as [string];
const backend = await openTarget(target);
await startWorker({
  backend,
  flows: [tenantFlow(recorderOf(backend)) as never],
  queues: ['tenants'],
  // Short claims and leases: a killed worker's slots and executions come back within ~1 s.
  work: { pollMs: 20, claimTtlMs: 1_000 },
  leaseTtlMs: 1_000,
  recoverEveryMs: 200,
  timerPollMs: 50,
});
process.stdout.write('ready\n');
