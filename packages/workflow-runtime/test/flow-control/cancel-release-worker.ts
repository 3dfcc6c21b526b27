// The processes of the cancel-mode singleton test where the enqueuer and the older run's worker
// both die (ADR 0059, amendment of 2026-12-07). Modes:
// - `enqueue-newer <id>`: a runtime of the later release (the flow at version '2') enqueues the
//   newer start and stalls in the read that precedes its cancel of the older run, after printing
//   `written <itemId>`: the test SIGKILLs it there, between the insert and the cancel.
// - `recover`: a runtime of the earlier release (the unversioned flow) that works no queue: its
//   recovery resumes the older run once its worker is dead, and prints `recovered <executionId>`.
// - `work-v2`: a worker of the later release on queue 'replaced' (it cannot claim the older,
//   unversioned item).
// argv: <sqlite:path | postgres:schema> <mode> [id]
import type { QueueStore } from '@loom/event-runtime';
import { createRuntime, startWorker } from '../../src/index.js';
import { cancelQueue, cancelSingletonFlow } from './singleton-flow.js';
import { openTarget } from './tenant-flow.js';

const [target, mode, given] = process.argv.slice(2) as [string, string, string | undefined];
const id = given ?? 'r-1';
const backend = await openTarget(target);
const short = { leaseTtlMs: 1_000, recoverEveryMs: 200, timerPollMs: 50 };

if (mode === 'enqueue-newer') {
  const flow = cancelSingletonFlow(backend, '2');
  const stalled = new Proxy(backend.queues as QueueStore, {
    get(store, property, receiver) {
      if (property !== 'unfinishedOfPartition') return Reflect.get(store, property, receiver);
      return () => new Promise(() => undefined);
    },
  });
  const runtime = createRuntime({
    store: backend.events,
    leases: backend.leases,
    queues: stalled,
    flows: [flow],
    ...short,
  });
  void runtime.enqueue(cancelQueue, flow, { id, tenant: 'acme' }, { itemId: id });
  // The enqueue wrote the item, then stalls in the read before its cancel: say so once it is in.
  for (;;) {
    if ((await backend.queues.get(cancelQueue, id)) !== undefined) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  process.stdout.write(`written ${id}\n`);
} else if (mode === 'recover') {
  const runtime = createRuntime({ backend, flows: [cancelSingletonFlow(backend)], ...short });
  runtime.events.on('execution:recovered', (event) => {
    process.stdout.write(`recovered ${event.executionId}\n`);
  });
  process.stdout.write('ready\n');
} else if (mode === 'work-v2') {
  await startWorker({
    backend,
    flows: [cancelSingletonFlow(backend, '2') as never],
    queues: [cancelQueue],
    work: { pollMs: 20, claimTtlMs: 1_000 },
    ...short,
  });
  process.stdout.write('ready\n');
} else {
  throw new Error(`unknown mode ${mode}`);
}
