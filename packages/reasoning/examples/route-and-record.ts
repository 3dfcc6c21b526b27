// A model call as a durable step, behind a router with fallback and retries, with no network:
// two stub models stand in for real providers (swap in fromAiSdk(...) for the real thing).
//   pnpm --filter @loom/reasoning exec tsx examples/route-and-record.ts
import { InMemoryEventStore } from '@loom/event-runtime';
import { createKernelRuntime } from '@loom/event-runtime/kernel';
import { createRouter, modelStep, StubModel, withRetry } from '@loom/reasoning';

// The "big" model is down; the router falls back to the local one, and records that it did.
const big = new StubModel({ id: 'big', script: [{ fail: { code: 'MODEL_UNAVAILABLE' } }] });
const local = new StubModel({
  id: 'local',
  model: 'qwen2.5-7b',
  latencyMs: 20,
  script: [{ toolCalls: [{ tool: 'search', input: { q: 'durable execution' } }] }],
  prices: { 'qwen2.5-7b': { inputUsdPerMTok: 0.1, outputUsdPerMTok: 0.3 } },
});
const router = createRouter([
  { provider: withRetry(big, { attempts: 1 }), tags: ['smart'] },
  { provider: withRetry(local, { attempts: 3 }), tags: ['smart', 'cheap'] },
]);

const runtime = createKernelRuntime({ store: new InMemoryEventStore() });
const handle = await runtime.start(
  {
    name: 'research',
    run: async (ctx, question: string) =>
      modelStep(ctx, 'decide', router, {
        messages: [{ role: 'user', content: question }],
        tools: [{ name: 'search', description: 'Search the web', inputSchema: { type: 'object' } }],
        tags: ['smart'],
      }),
  },
  'What is durable execution?',
);
const decision = await handle.result();
console.log(decision.toolCalls); // [ { callId: 'stub-0-0', tool: 'search', input: { q: 'durable execution' } } ]
console.log(
  decision.provider,
  decision.fallbacks.map((f) => `${f.route}: ${f.code}`),
); // local [ 'big: MODEL_UNAVAILABLE' ]
console.log(decision.usage, decision.costUsd, decision.latencyMs);
await runtime.shutdown();
