import { describe, expect, it } from 'vitest';
import type { Clock } from '../clock.js';
import { ErrorCode, LoomError } from '../errors.js';
import { InMemoryEventStore } from '../index.js';
import type { NodeClaim } from '../lease-store.js';
import { InMemoryLeaseStore } from '../store/memory/in-memory-lease-store.js';
import { ManualClock } from '../testing/manual-clock.js';
import type { Flow } from './flow.js';
import { reclaimDelayFirstMs } from './node-presence.js';
import { createKernelRuntime } from './runtime.js';

/**
 * The in-memory lease store, whose claims can be ended from outside (`endClaims`: what a
 * terminated Postgres claim session does) and whose next `failClaims` claims fail as an
 * unreachable store would.
 */
class EndableClaims extends InMemoryLeaseStore {
  private readonly ends: Array<() => Promise<void>> = [];
  failClaims = 0;
  claimCalls = 0;

  override async claimNode(nodeId: string): Promise<NodeClaim | undefined> {
    this.claimCalls++;
    if (this.failClaims > 0) {
      this.failClaims--;
      throw new LoomError(ErrorCode.STORE_UNAVAILABLE, 'the lease store is unreachable');
    }
    const claim = await super.claimNode(nodeId);
    if (claim === undefined) return undefined;
    let end: () => void = () => undefined;
    const lost = new Promise<void>((resolve) => {
      end = resolve;
    });
    this.ends.push(async () => {
      await claim.release();
      end();
    });
    return { nodeId, release: () => claim.release(), lost };
  }

  async endClaims(): Promise<void> {
    for (const end of this.ends.splice(0)) await end();
  }
}

function setup(clock: Clock & ManualClock) {
  const leases = new EndableClaims({ clock });
  const errors: string[] = [];
  const runtime = createKernelRuntime({
    store: new InMemoryEventStore({ clock }),
    leases,
    clock,
    nodeId: 'node-a',
    recoverEveryMs: 0,
    timerPollMs: 0,
    onError: (error) => errors.push(String((error as { code?: string }).code ?? error)),
  });
  const seen: string[] = [];
  runtime.events.on('node:claim_lost', () => seen.push('lost'));
  runtime.events.on('node:claimed', (event) => seen.push(`claimed after ${event.attempts}`));
  return { leases, errors, runtime, seen };
}

const flow: Flow<null, string> = {
  name: 'one-step',
  run: async (ctx) => ctx.step('s', () => 'ok'),
};

describe('a node claim that ends while the node lives', () => {
  it('is reported, takes no new work, and is claimed again with backoff on the clock', async () => {
    const clock = new ManualClock();
    const { leases, errors, runtime, seen } = setup(clock);
    expect(await (await runtime.start(flow, null)).result()).toBe('ok');
    expect(runtime.claimLost).toBe(false);

    leases.failClaims = 2;
    await leases.endClaims();
    await clock.advance(0);
    expect(seen).toEqual(['lost']);
    expect(errors).toEqual([ErrorCode.NODE_CLAIM_LOST, ErrorCode.STORE_UNAVAILABLE]);
    expect(runtime.claimLost).toBe(true);
    expect(await leases.liveNodes(['node-a'])).toEqual(new Set());
    // No new work meanwhile: recovery and timer rounds take nothing, a start waits.
    expect(await runtime.recover()).toEqual([]);
    expect(await runtime.wakeDue()).toEqual([]);
    let started = false;
    const starting = runtime.start(flow, null, { executionId: 'while-lost' }).then((handle) => {
      started = true;
      return handle;
    });

    const before = leases.claimCalls;
    await clock.advance(reclaimDelayFirstMs - 1);
    expect(leases.claimCalls).toBe(before);
    await clock.advance(1);
    // The second try failed too: the next waits twice as long.
    expect(leases.claimCalls).toBe(before + 1);
    expect(runtime.claimLost).toBe(true);
    expect(started).toBe(false);
    await clock.advance(2 * reclaimDelayFirstMs);
    expect(leases.claimCalls).toBe(before + 2);
    expect(seen).toEqual(['lost', 'claimed after 3']);
    expect(runtime.claimLost).toBe(false);
    expect(await leases.liveNodes(['node-a'])).toEqual(new Set(['node-a']));
    expect(await (await starting).result()).toBe('ok');
    expect(errors).toEqual([
      ErrorCode.NODE_CLAIM_LOST,
      ErrorCode.STORE_UNAVAILABLE,
      ErrorCode.STORE_UNAVAILABLE,
    ]);
    await runtime.shutdown();
  });

  it('a shutdown while the claim is lost stops the tries and lets a waiting start go', async () => {
    const clock = new ManualClock();
    const { leases, runtime, seen } = setup(clock);
    expect(await (await runtime.start(flow, null)).result()).toBe('ok');
    leases.failClaims = 1_000;
    await leases.endClaims();
    await clock.advance(0);
    const starting = runtime.start(flow, null).catch((error: unknown) => (error as LoomError).code);
    await runtime.shutdown();
    const calls = leases.claimCalls;
    await clock.advance(10_000);
    expect(leases.claimCalls).toBe(calls);
    expect(seen).toEqual(['lost']);
    expect(await starting).toBe(ErrorCode.RUNTIME_SHUT_DOWN);
  });
});
