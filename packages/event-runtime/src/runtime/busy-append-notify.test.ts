// A child's terminal append carries its parent's wake-up (`AppendGuard.notify`, ADR 0047). When
// the store refuses that append as busy, the journal sends it again (bounded, backing off): the
// resent append must still carry the wake-up, or the parent stays suspended for good. Found by
// the simulator (a `ctx.waitForEvent` wait is a child): the resend kept the status, not the notify.
import { expect, it } from 'vitest';
import type { AppendGuard, EventEnvelope, StoredEvent } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import type { AppendOutcome, AppendRequest } from '../event-store.js';
import { InMemoryEventStore } from '../store/memory/in-memory-event-store.js';
import type { Flow } from './flow.js';
import { createKernelRuntime } from './runtime.js';

/** A memory store that refuses the first append carrying a `notify` as busy, writing nothing. */
class BusyOnNotifyStore extends InMemoryEventStore {
  refused = 0;

  private refuse(guards: ReadonlyArray<AppendGuard | undefined>): void {
    if (this.refused === 0 && guards.some((guard) => guard?.notify !== undefined)) {
      this.refused += 1;
      throw new LoomError(ErrorCode.STORE_BUSY, 'busy (test)');
    }
  }

  override async append(
    envelopes: readonly EventEnvelope[],
    guard?: AppendGuard,
  ): Promise<StoredEvent[]> {
    this.refuse([guard]);
    return super.append(envelopes, guard);
  }

  override async appendBatch(requests: readonly AppendRequest[]): Promise<AppendOutcome[]> {
    this.refuse(requests.map((request) => request.guard));
    return super.appendBatch(requests);
  }
}

it('a child whose terminal append is refused as busy still wakes its parent', async () => {
  const store = new BusyOnNotifyStore();
  const child: Flow<null, string> = {
    name: 'child',
    run: async (ctx) => ctx.step('work', () => 'done'),
  };
  const parent: Flow<null, string> = {
    name: 'parent',
    run: async (ctx) => `parent got ${await ctx.child(child, null, { executionId: 'kid' })}`,
  };
  const runtime = createKernelRuntime({
    store,
    timerPollMs: 20,
    inlineWaitMs: 0,
    flows: [parent, child] as Flow<never, unknown>[],
  });
  try {
    const handle = await runtime.start(parent, null, { executionId: 'mom' });
    // Without the fix this never settles: the package's 60 s test timeout is the bound.
    expect(await handle.result()).toBe('parent got done');
    expect(store.refused).toBe(1);
    const inbox = await store.readSignals('mom');
    expect(inbox.map((signal) => signal.name)).toEqual(['loom.child.settled']);
  } finally {
    await runtime.shutdown();
  }
});
