import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Flow } from '@loom/event-runtime';
import { createKernelRuntime, type KernelRuntime } from '@loom/event-runtime/kernel';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ModelDelta, ModelRequest, ModelResponse } from '../model-provider.js';
import { StubModel } from '../stub/stub-model.js';
import { modelStep } from './model-step.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-reasoning-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
let counter = 0;
const open: { runtime: KernelRuntime; store: SqliteEventStore }[] = [];
afterEach(async () => {
  for (const { runtime, store } of open.splice(0)) {
    await runtime.shutdown();
    await store.close();
  }
});

function node(path: string, nodeId: string, flows: Flow<never, unknown>[] = []) {
  const store = SqliteEventStore.open({ path, migrate: true });
  const runtime = createKernelRuntime({ store, nodeId, flows });
  open.push({ runtime, store });
  return { runtime, store };
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const tools = [{ name: 'search', description: 'Search', inputSchema: { type: 'object' } }];
const request: ModelRequest = { messages: [{ role: 'user', content: 'go' }], tools };

describe('modelStep in a kernel flow on SQLite', () => {
  it('the model is called once; a resume on another node replays the recorded response', async () => {
    const path = join(directory, `step-${++counter}.db`);
    const model = new StubModel({
      script: [
        {
          text: 'calling',
          toolCalls: [
            { tool: 'search', input: { q: 'loom' } },
            { tool: 'search', rawInput: '{"q": ' },
          ],
        },
      ],
    });
    const hang = deferred();
    let afterRuns = 0;
    const flow: Flow<null, ModelResponse> = {
      name: 'decide',
      run: async (ctx) => {
        const response = await modelStep(ctx, 'decide', model, request);
        await ctx.step('after', async () => {
          afterRuns++;
          if (afterRuns === 1) await hang.promise; // the first node dies here
          return null;
        });
        return response;
      },
    };
    const first = node(path, 'first');
    const { executionId } = await first.runtime.start(flow, null);
    await expect.poll(() => afterRuns, { timeout: 5_000 }).toBe(1);

    const second = node(path, 'second', [flow as Flow<never, unknown>]);
    const response = await (await second.runtime.resume<ModelResponse>(executionId)).result();
    expect(model.calls).toBe(1);
    expect(response.toolCalls).toEqual([
      { callId: 'stub-0-0', tool: 'search', input: { q: 'loom' } },
    ]);
    // Recorded as returned: the invalid call is in the log, verbatim, for the agent loop.
    expect(response.invalidToolCalls).toMatchObject([
      { rawInput: '{"q": ', reason: 'input_not_json' },
    ]);
    const completed = (await second.store.read(executionId)).find(
      (event) =>
        event.type === 'step.completed' && (event.payload as { name: string }).name === 'decide',
    );
    expect(JSON.stringify(completed?.payload)).toContain('{\\"q\\": ');
    hang.resolve();
  });

  it('streamed deltas reach onDelta live; the log holds the final response, not a write per delta', async () => {
    const words = Array.from({ length: 300 }, (_, i) => `w${i}`).join(' ');
    const path = join(directory, `stream-${++counter}.db`);
    const { runtime, store } = node(path, 'n');
    const eventsOf = async (text: string, streamed: boolean) => {
      const model = new StubModel({ script: [{ text }] });
      const deltas: ModelDelta[] = [];
      const flow: Flow<null, string> = {
        name: `s-${streamed}-${text.length}`,
        run: async (ctx) =>
          (
            await modelStep(
              ctx,
              'talk',
              model,
              request,
              streamed ? { onDelta: (d) => deltas.push(d) } : {},
            )
          ).text,
      };
      const handle = await runtime.start(flow, null);
      expect(await handle.result()).toBe(text);
      return { events: (await store.read(handle.executionId)).length, deltas };
    };
    const streamed = await eventsOf(words, true);
    expect(streamed.deltas.filter((d) => d.type === 'text')).toHaveLength(300);
    expect(streamed.deltas.at(-1)?.type).toBe('finish');
    const plain = await eventsOf(words, false);
    expect(streamed.events).toBe(plain.events);
  });

  it('hostile model text survives the log: lone surrogates, NUL, control characters', async () => {
    const hostile = `a\ud800b\udfffc\u0000d\u001be\u2028f${'é'.repeat(10_000)}`;
    const path = join(directory, `hostile-${++counter}.db`);
    const model = new StubModel({ script: [{ text: hostile }] });
    const flow: Flow<null, string> = {
      name: 'hostile',
      run: async (ctx) => (await modelStep(ctx, 'talk', model, request)).text,
    };
    const first = node(path, 'a', [flow as Flow<never, unknown>]);
    const handle = await first.runtime.start(flow, null);
    expect(await handle.result()).toBe(hostile);
    // A second node reads it back from the file (a replay) and gets the same text.
    const reader = node(path, 'b', [flow as Flow<never, unknown>]);
    const replayed = await (await reader.runtime.resume<string>(handle.executionId)).result();
    expect(replayed).toBe(hostile);
    expect(model.calls).toBe(1);
  });

  it('a model failure fails the step with the model code recorded', async () => {
    const path = join(directory, `fail-${++counter}.db`);
    const model = new StubModel({ script: [{ fail: { code: 'MODEL_BAD_REQUEST' } }] });
    const flow: Flow<null, unknown> = {
      name: 'fails',
      run: async (ctx) => modelStep(ctx, 'talk', model, request),
    };
    const { runtime } = node(path, 'n');
    const handle = await runtime.start(flow, null);
    const error = await handle.result().catch((e: unknown) => e);
    expect(JSON.stringify(error)).toContain('MODEL_BAD_REQUEST');
  });

  it('a response too big for the log is refused typed (the step fails), not half-recorded', async () => {
    const path = join(directory, `huge-${++counter}.db`);
    const model = new StubModel({ script: [{ text: 'x'.repeat(2 * 1024 * 1024) }] });
    const flow: Flow<null, unknown> = {
      name: 'huge',
      run: async (ctx) => (await modelStep(ctx, 'talk', model, request)).text.length,
    };
    const { runtime } = node(path, 'n');
    const handle = await runtime.start(flow, null);
    const error = await handle.result().catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'LoomError' });
    expect(JSON.stringify((error as { fields: unknown }).fields)).toContain('LIMIT_EXCEEDED');
    expect(model.calls).toBe(1);
  });
});
