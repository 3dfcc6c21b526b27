import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { spawnTestProcess } from '@loom/event-runtime/testing';
import { expect, it } from 'vitest';

const directory = join(import.meta.dirname, '../../examples');
const expected: Record<string, RegExp> = {
  'steps-and-retries.ts':
    /receipt for order-7 .*attempt 3\) after 3 calls\nEXECUTION_FAILED: step 'refund-card' after 2 attempts: refund gateway down\nrefunded 1200 on order-7 \(manual\)/,
  'durable-sleep.ts': /active while sleeping: 0\nreminded ada, \d+ ms later/,
  'signals.ts': /refused: INVALID_SIGNAL\n120 approved by grace/,
  'children-and-continue-as-new.ts': /= 30/,
  'versions-and-patches.ts': /before the deploy: old path\nstarted after the deploy: new path/,
  'cron.ts': /fired [1-4] runs, e\.g\. cron:every-second:\d+/,
  'find-executions.ts':
    /failed: charge-2\nall: charge-1:completed charge-2:failed charge-3:completed\nqueue charges: depth 0, completed 1, failed 1/,
  'events.ts':
    /duplicate: true\nreceipt for o-7: 42\nruns: event:12:send-receipt:o-7\no-8: shipped, paid 42\nEXECUTION_CANCELLED/,
  'flow-control.ts':
    /most at once: 1 per tenant, 2 in all\nstart: FLOW_CONTROL_NEEDS_QUEUE\nthrottled: 3 started, 1 waiting for the next minute\nsingleton: duplicate true, same run true\ndedupe window: after the run finished, duplicate true, same run true/,
  'queries-and-updates.ts':
    /refused: INVALID_UPDATE\nanswers: 1 1\nitems: apple\nresult: apple, pear/,
  'queues.ts':
    /dedupe: true true\nran in priority order: ceo@example.com, cto@example.com, newsletter@example.com/,
};

// docs/flows.md shows these files: each must run and print what the page says.
for (const file of readdirSync(directory).filter((name) => name.endsWith('.ts'))) {
  it(`example ${file} runs`, async () => {
    const { stdout } = await spawnTestProcess(join(directory, file), {
      cwd: directory,
    }).succeeded();
    expect(stdout).toMatch(expected[file] ?? /^$/);
  }, 30_000);
}
