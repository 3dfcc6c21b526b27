// A worker process of the update crash test: drives `update-cart` executions on the target
// (timers, recovery, short leases so a killed worker's execution comes back within ~1 s); a
// `doomed` one first starts execution `cart-1`. Prints `ready` once it runs.
// argv: <sqlite:path | postgres:schema> <doomed | fresh>
import { createRuntime } from '../../src/index.js';
import { openTarget } from '../flow-control/tenant-flow.js';
import { cartFlow } from './update-flow.js';

const [target, mode] = process.argv.slice(2) as [string, 'doomed' | 'fresh'];
const backend = await openTarget(target);
const flow = cartFlow(mode);
const runtime = createRuntime({
  backend,
  flows: [flow],
  leaseTtlMs: 1_000,
  recoverEveryMs: 200,
  timerPollMs: 50,
});
if (mode === 'doomed') await runtime.start(flow, undefined as never, { executionId: 'cart-1' });
await runtime.recover();
process.stdout.write('ready\n');
await runtime.serve();
