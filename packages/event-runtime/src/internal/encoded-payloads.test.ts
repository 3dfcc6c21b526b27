import { describe, expect, it } from 'vitest';
import type { AppendGuard, EventEnvelope, StoredEvent } from '../envelope.js';
import type { Flow } from '../runtime/flow.js';
import { createKernelRuntime } from '../runtime/runtime.js';
import { InMemoryEventStore } from '../store/memory/in-memory-event-store.js';

/**
 * A store decorator that gives some events a payload of its own by copying the envelope (as an
 * encrypting or externalizing decorator does). The copy carries the runtime's private symbols
 * along; the store must write the decorator's payload, not the text the runtime encoded.
 */
class WrappingStore extends InMemoryEventStore {
  override append(
    envelopes: readonly EventEnvelope[],
    guard?: AppendGuard,
  ): Promise<StoredEvent[]> {
    return super.append(
      envelopes.map((envelope) =>
        envelope.type === 'step.completed' || envelope.type === 'execution.started'
          ? { ...envelope, payload: { wrapped: envelope.payload } }
          : envelope,
      ),
      guard,
    );
  }
}

const flow: Flow<{ n: number }, number> = {
  name: 'wrapped',
  run: async (ctx, input) => ctx.step('double', () => input.n * 2),
};

describe('the payload text the runtime encoded', () => {
  it('is not written when a decorator replaced the payload of a copied envelope', async () => {
    const store = new WrappingStore();
    const runtime = createKernelRuntime({ store, timerPollMs: 0 });
    const handle = await runtime.start(flow, { n: 21 }, { executionId: 'wrapped-1' });
    await handle.result().catch(() => undefined);
    await runtime.shutdown();
    const events = await store.read('wrapped-1');
    const started = events.find((event) => event.type === 'execution.started');
    const completed = events.find((event) => event.type === 'step.completed');
    expect(started?.payload).toMatchObject({ wrapped: { input: { n: 21 } } });
    expect(completed?.payload).toMatchObject({ wrapped: expect.anything() });
  });

  it('is still written when the envelope keeps the payload the runtime encoded', async () => {
    const store = new InMemoryEventStore();
    const runtime = createKernelRuntime({ store, timerPollMs: 0 });
    const handle = await runtime.start(flow, { n: 21 }, { executionId: 'plain-1' });
    await expect(handle.result()).resolves.toBe(42);
    await runtime.shutdown();
    const events = await store.read('plain-1');
    expect(events.map((event) => event.type)).toEqual([
      'execution.started',
      'step.started',
      'step.completed',
      'execution.completed',
    ]);
  });
});
