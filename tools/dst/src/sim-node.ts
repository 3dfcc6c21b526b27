import type { NodeWorld } from './internal/node-world.js';
import { StoreLink } from './internal/store-link.js';
import { NodeClock } from './node-clock.js';
import { createSimRuntime, type SimFlow, type SimRuntime } from './runtime-adapter.js';
import { SimEventStore } from './sim-event-store.js';
import { SimLeaseStore } from './sim-lease-store.js';
import { SimQueueStore } from './sim-queue-store.js';

/** What every node does when its process boots. */
export interface NodeBoot {
  flows: readonly SimFlow[];
  /** Queues this node works, with their global concurrency limit. */
  queues: ReadonlyArray<{ queue: string; concurrencyMax: number }>;
  /** Called once the runtime exists (a schedule, say); failures are retried by the world. */
  onBoot?: (runtime: SimRuntime) => Promise<void>;
  /**
   * Called synchronously once the runtime exists, before it recovers or works anything: what
   * must be registered with it first (an agent runtime's flows), bound to the node's clock.
   */
  attach?: (runtime: SimRuntime, clock: NodeClock) => void;
}

/**
 * A simulated process: a real runtime on its own {@link NodeClock} and its own simulated store
 * handles, sharing the stores with the other nodes. It can be paused (SIGSTOP, then SIGCONT) and
 * restarted (SIGKILL, then a new process with a new node id that runs `recover()`).
 */
export class SimNode {
  clock!: NodeClock;
  runtime!: SimRuntime;
  link!: StoreLink;
  leases!: SimLeaseStore;
  private incarnation = 0;

  constructor(
    readonly name: string,
    private readonly world: NodeWorld,
    private readonly boot: NodeBoot,
  ) {
    this.start();
  }

  get running(): boolean {
    return !this.clock.isPaused && !this.clock.isDead;
  }

  get paused(): boolean {
    return this.clock.isPaused;
  }

  /** Freezes the node for `ms` of virtual time. */
  pause(ms: number): void {
    const { clock } = this;
    clock.pause();
    this.world.clock.setTimer(() => clock.resume(), ms);
  }

  resume(): void {
    this.clock.resume();
  }

  /** Kills the process (nothing of it runs again) and boots a new one in its place. */
  restart(): void {
    this.clock.kill();
    void this.leases.dropClaims();
    this.incarnation += 1;
    this.start();
    const { runtime } = this;
    void this.world.client.retryOn(`recover on ${runtime.nodeId}`, this.clock, () =>
      runtime.recover(),
    );
  }

  private start(): void {
    const { world } = this;
    const nodeId = `${this.name}.${this.incarnation}`;
    this.clock = new NodeClock(world.clock);
    this.link = new StoreLink(
      nodeId,
      this.clock,
      world.clock,
      world.random.fork(`store:${nodeId}`),
      world.faults,
      world.recorder,
    );
    this.link.healed = world.healed;
    this.leases = new SimLeaseStore(world.stores.leases, this.link);
    this.runtime = createSimRuntime({
      nodeId,
      clock: this.clock,
      store: new SimEventStore(world.stores.events, this.link, world.faults.injectBug),
      leases: this.leases,
      queues: new SimQueueStore(world.stores.queues, this.link, () => world.clock.now()),
      flows: this.boot.flows,
      onError: (error) => world.backgroundError(nodeId, error),
      // A third of the incarnations start nothing themselves (a web process in front of
      // workers): their starts are run by whichever node's timer poll takes them.
      handOffStarts: world.random.fork(`hand-off:${nodeId}`).chance(1 / 3),
    });
    this.boot.attach?.(this.runtime, this.clock);
    for (const { queue, concurrencyMax } of this.boot.queues) {
      this.runtime.work(queue, { concurrencyMax });
    }
    const { onBoot } = this.boot;
    const { runtime } = this;
    if (onBoot !== undefined) {
      void world.client.retryOn(`boot of ${nodeId}`, this.clock, () => onBoot(runtime));
    }
  }
}
