// Type-checked (never run) under moduleResolution NodeNext and Bundler without pg,
// better-sqlite3 or their @types installed.
import { retryMiddleware } from '@loom/middleware';
import { type ModelResponse, StubModel } from '@loom/reasoning';
import { fromAiSdk } from '@loom/reasoning/ai-sdk';
import { type RenderResult, renderMessages } from '@loom/render';
import { parallelLimit } from '@loom/scheduler';
import { createRuntime, defineFlow, openMemory } from '@loom/workflow-runtime';
import { parseCron } from '@loom/workflow-runtime/cron';

const greet = defineFlow({ name: 'greet' }, async (ctx, input: { name: string }) =>
  ctx.step('shout', () => `${input.name.toUpperCase()}!`),
);
const runtime = createRuntime({ backend: openMemory(), flows: [greet] });
const handle = await runtime.start(greet, { name: 'loom' }, { executionId: 'greet-1' });
const result: string = await handle.result();
const doubled: number[] = await parallelLimit([1, 2, 3], 2, async (n: number) => n * 2);
const answer: ModelResponse = await new StubModel({ script: [{ text: 'hi' }] }).generate({
  messages: [{ role: 'user', content: 'hello' }],
});
const prompt: RenderResult = renderMessages(
  { kind: 'group', children: [{ kind: 'system', text: 'Be brief.', required: true }] },
  { tokenBudget: 100 },
);
export const used = [prompt, result, doubled, retryMiddleware, parseCron, answer, fromAiSdk];
