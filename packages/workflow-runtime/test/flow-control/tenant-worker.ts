// A worker process of the per-key concurrency and throttle tests: works queue 'tenants' with the
// flow of tenant-flow.ts (or, with `throttle`, queue 'throttled' with throttle-flow.ts's; with
// `singleton`, queue 'singletons' with singleton-flow.ts's; with `debounce`, queue 'debounced'
// with debounce-flow.ts's; with `cancel`, queue 'replaced' with singleton-flow.ts's cancel-mode
// flow) until the test SIGKILLs it.
// argv: <sqlite:path | postgres:schema> [throttle | singleton | debounce | cancel]
import { startWorker } from '../../src/index.js';
import { debounceFlow, debounceQueue } from './debounce-flow.js';
import {
  cancelQueue,
  cancelSingletonFlow,
  singletonFlow,
  singletonQueue,
} from './singleton-flow.js';
import { openTarget, recorderOf, tenantFlow } from './tenant-flow.js';
import { throttledFlow, throttleQueue } from './throttle-flow.js';

const [target, mode] = process.argv.slice(2) as [string, string | undefined];
const backend = await openTarget(target);
const [flow, queue] =
  mode === 'throttle'
    ? [throttledFlow(backend), throttleQueue]
    : mode === 'singleton'
      ? [singletonFlow(backend), singletonQueue]
      : mode === 'debounce'
        ? [debounceFlow(backend), debounceQueue]
        : mode === 'cancel'
          ? [cancelSingletonFlow(backend), cancelQueue]
          : [tenantFlow(recorderOf(backend)), 'tenants'];
await startWorker({
  backend,
  flows: [flow as never],
  queues: [queue],
  // Short claims and leases: a killed worker's slots and executions come back within ~1 s.
  work: { pollMs: 20, claimTtlMs: 1_000 },
  leaseTtlMs: 1_000,
  recoverEveryMs: 200,
  timerPollMs: 50,
});
process.stdout.write('ready\n');
