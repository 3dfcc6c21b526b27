// A user of the memory store, in plain Node ESM, with no optional peer installed (pg,
// better-sqlite3, @opentelemetry/api, vitest, fast-check, @ai-sdk/provider, gpt-tokenizer):
// every package's root entry loads, and one flow runs to its result.
import { createKernelRuntime } from '@loom/event-runtime/kernel';
import { retryMiddleware } from '@loom/middleware';
import { tracingMiddleware } from '@loom/middleware/tracing';
import { modelStep, StubModel } from '@loom/reasoning';
import { fromAiSdk } from '@loom/reasoning/ai-sdk';
import { renderMessages } from '@loom/render';
import { parallelLimit } from '@loom/scheduler';
import { openView } from '@loom/view';
import { createRuntime, defineFlow, openMemory } from '@loom/workflow-runtime';
import { parseCron } from '@loom/workflow-runtime/cron';

const check = (ok, what) => {
  if (!ok) throw new Error(`pack-install memory: ${what}`);
};
check(typeof retryMiddleware === 'function', '@loom/middleware has no retryMiddleware');
// The tracing entry loads without @opentelemetry/api (an optional peer it imports on first use).
check(typeof tracingMiddleware === 'function', '@loom/middleware/tracing has no tracingMiddleware');
check(typeof defineFlow === 'function', '@loom/workflow-runtime has no defineFlow');
// The view loads without either driver, and names the one to install when --db needs it.
const noDriver = await openView({ db: 'sqlite:./none.db' }).then(
  () => undefined,
  (error) => error,
);
check(noDriver?.code === 'DRIVER_MISSING', `@loom/view without better-sqlite3: ${noDriver?.code}`);
check(typeof parseCron === 'function', '@loom/workflow-runtime/cron has no parseCron');
// The AI SDK adapter loads without any AI SDK package (an optional peer the user installs).
check(typeof fromAiSdk === 'function', '@loom/reasoning/ai-sdk has no fromAiSdk');
check(typeof modelStep === 'function', '@loom/reasoning has no modelStep');
const prompt = renderMessages(
  { kind: 'group', children: [{ kind: 'system', text: 'Be brief.', required: true }] },
  { tokenBudget: 100 },
);
check(prompt.messages.length === 1 && prompt.messages[0].role === 'system', 'renderMessages');
const stub = new StubModel({ script: [{ text: 'hi' }] });
const answer = await stub.generate({ messages: [{ role: 'user', content: 'hello' }] });
check(answer.text === 'hi' && answer.costUsd === null, 'StubModel answered wrongly');
check(
  (await parallelLimit([1, 2, 3], 2, async (n) => n * 2)).join() === '2,4,6',
  'parallelLimit returned the wrong results',
);

check(
  typeof createKernelRuntime === 'function',
  '@loom/event-runtime/kernel has no createKernelRuntime',
);
const greet = defineFlow({ name: 'greet' }, async (ctx, input) =>
  ctx.step('shout', () => `${input.name.toUpperCase()}!`),
);
const runtime = createRuntime({ backend: openMemory(), flows: [greet] });
const handle = await runtime.start(greet, { name: 'loom' }, { executionId: 'greet-1' });
const result = await handle.result();
await runtime.shutdown();
check(result === 'LOOM!', `the flow returned ${JSON.stringify(result)}`);
console.log(
  'pack-install memory: ok (7 packages imported, one flow ran in memory, the view refused a driver it lacks)',
);
