// A start runs the flow registered under the started flow's name and version, the code a resume
// of the execution would run: the flow object handed to `start` (or `ctx.child`) names it. A
// workflow runtime relies on it to give a built-in flow (an event wait) its own store.
import { expect, it } from 'vitest';
import { InMemoryEventStore } from '../store/memory/in-memory-event-store.js';
import type { Flow } from './flow.js';
import { createKernelRuntime } from './runtime.js';

it('a start runs the registered flow of its name and version, not the object it was given', async () => {
  const registered: Flow<null, string> = {
    name: 'greet',
    version: '2',
    run: async (ctx) => ctx.step('say', () => 'registered'),
  };
  const named: Flow<null, string> = { name: 'greet', version: '2', run: async () => 'given' };
  const other: Flow<null, string> = { name: 'greet', run: async () => 'unversioned' };
  const runtime = createKernelRuntime({
    store: new InMemoryEventStore(),
    flows: [registered] as Flow<never, unknown>[],
  });
  try {
    expect(await (await runtime.start(named, null, { executionId: 'g-1' })).result()).toBe(
      'registered',
    );
    // Another version is another flow: the object given runs (and is registered from then on).
    expect(await (await runtime.start(other, null, { executionId: 'g-2' })).result()).toBe(
      'unversioned',
    );
  } finally {
    await runtime.shutdown();
  }
});
