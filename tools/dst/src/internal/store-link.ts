import { type Clock, ErrorCode, LoomError } from '@loom/event-runtime';
import type { Faults } from '../faults.js';
import type { NodeClock } from '../node-clock.js';
import type { SeededRandom } from '../seeded-random.js';
import type { Recorder } from './recorder.js';

/**
 * The wire between one node and the shared stores: latency each way on the virtual clock,
 * transient failures and lost acknowledgements drawn from the seed, and the node's own state (a
 * paused node receives no answer until it resumes; a dead one never does).
 */
export class StoreLink {
  /** Faults stop being drawn once the simulation heals (the end phase). */
  healed = false;

  constructor(
    readonly node: string,
    private readonly nodeClock: NodeClock,
    private readonly shared: Clock,
    private readonly random: SeededRandom,
    private readonly faults: Faults,
    readonly recorder: Recorder,
  ) {}

  /** One leg of a round trip: the latency, then wait until the node runs. */
  async leg(): Promise<void> {
    const [min, max] = this.faults.storeLatencyMs ?? [0, 0];
    const latencyMs = max > 0 ? this.random.between(min, max) : 0;
    if (latencyMs > 0) {
      await new Promise<void>((resolve) => this.shared.setTimer(resolve, latencyMs));
    }
    await this.nodeClock.whenRunning();
  }

  /** Fails the call before it reaches the store, with the seed's probability. */
  failBefore(operation: string): void {
    if (this.healed || !this.random.chance(this.faults.transientError ?? 0)) return;
    this.recorder.faults.transientErrors += 1;
    const code = this.random.chance(0.5) ? ErrorCode.STORE_BUSY : ErrorCode.STORE_UNAVAILABLE;
    throw new LoomError(code, `${operation} failed: injected by the simulation (${this.node})`, {
      operation,
    });
  }

  /** True when this write's acknowledgement is lost (the write committed). */
  loseAck(): boolean {
    if (this.healed || !this.random.chance(this.faults.lostAck ?? 0)) return false;
    this.recorder.faults.lostAcks += 1;
    return true;
  }

  lostAckError(operation: string): LoomError {
    return new LoomError(
      ErrorCode.STORE_UNAVAILABLE,
      `${operation} committed but its acknowledgement was lost: injected by the simulation (${this.node})`,
      { operation },
    );
  }

  /** True when a test-only injected bug strikes this call (probability `p`). */
  bugStrikes(p: number): boolean {
    if (this.healed || !this.random.chance(p)) return false;
    this.recorder.faults.bugs += 1;
    return true;
  }

  /** A round trip with latency only: for the lease and queue stores, which fail nothing. */
  async pass<T>(work: () => Promise<T>): Promise<T> {
    await this.leg();
    const result = await work();
    await this.leg();
    return result;
  }

  /** A round trip: there, the call (failing before it with the seed's probability), back. */
  async call<T>(operation: string, work: () => Promise<T>): Promise<T> {
    await this.leg();
    this.failBefore(operation);
    const result = await work();
    await this.leg();
    return result;
  }

  /** A write round trip that may also lose its acknowledgement after committing. */
  async write<T>(operation: string, work: () => Promise<T>): Promise<T> {
    await this.leg();
    this.failBefore(operation);
    const result = await work();
    const lost = this.loseAck();
    await this.leg();
    if (lost) throw this.lostAckError(operation);
    return result;
  }
}
