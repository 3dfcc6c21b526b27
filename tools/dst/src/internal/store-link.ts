import { type Clock, ErrorCode, LoomError } from '@loom/event-runtime';
import type { Faults } from '../faults.js';
import type { NodeClock } from '../node-clock.js';
import type { SeededRandom } from '../seeded-random.js';
import type { Recorder } from './recorder.js';

/** Where a torn connection broke a write: before it committed, or after (the ack is lost). */
export type Tear = 'before-commit' | 'after-commit';

/**
 * The wire between one node and the shared stores: latency each way on the virtual clock,
 * transient failures, lost acknowledgements and torn connections drawn from the seed, and the
 * node's own state (a paused node receives no answer until it resumes; a dead one never does).
 * A torn connection refuses every call (event, lease and queue store) until its reconnect delay has passed; a
 * restarted node opens a new connection (a new link).
 */
export class StoreLink {
  /** Faults stop being drawn once the simulation heals (the end phase). */
  healed = false;
  /** Virtual time until which the torn connection is still reconnecting. */
  private downUntilMs = Number.NEGATIVE_INFINITY;

  constructor(
    readonly node: string,
    private readonly nodeClock: NodeClock,
    private readonly shared: Clock,
    private readonly random: SeededRandom,
    private readonly faults: Faults,
    readonly recorder: Recorder,
    /** Tears draw from their own stream, so the other faults of a seed stay where they were. */
    private readonly tearRandom: SeededRandom = random.fork('tear'),
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

  /**
   * Fails the call before it reaches the store: refused while a torn connection reconnects, else
   * a transient error with the seed's probability.
   */
  failBefore(operation: string): void {
    if (this.healed) return;
    this.refuseWhileReconnecting(operation);
    if (!this.random.chance(this.faults.transientError ?? 0)) return;
    this.recorder.faults.transientErrors += 1;
    const code = this.random.chance(0.5) ? ErrorCode.STORE_BUSY : ErrorCode.STORE_UNAVAILABLE;
    throw new LoomError(code, `${operation} failed: injected by the simulation (${this.node})`, {
      operation,
    });
  }

  /** Throws `STORE_UNAVAILABLE` while a torn connection is still reconnecting. */
  private refuseWhileReconnecting(operation: string): void {
    if (this.healed || this.shared.now() >= this.downUntilMs) return;
    this.recorder.faults.refusedWhileReconnecting += 1;
    throw new LoomError(
      ErrorCode.STORE_UNAVAILABLE,
      `${operation} failed: the connection is reconnecting after a tear, injected by the simulation (${this.node})`,
      { operation },
    );
  }

  /**
   * Whether the connection tears during this call (the seed's probability): if so, it is down
   * until a drawn reconnect delay has passed, and a write committed or not, half and half.
   */
  tear(): Tear | undefined {
    if (this.healed || !this.tearRandom.chance(this.faults.tornConnection ?? 0)) return undefined;
    this.recorder.faults.tornConnections += 1;
    const [min, max] = this.faults.reconnectMs ?? [0, 0];
    this.downUntilMs = this.shared.now() + this.tearRandom.between(min, max);
    return this.tearRandom.chance(0.5) ? 'after-commit' : 'before-commit';
  }

  tornError(operation: string, tear: Tear): LoomError {
    const outcome =
      tear === 'after-commit' ? 'after it committed' : 'before it committed (nothing written)';
    return new LoomError(
      ErrorCode.STORE_UNAVAILABLE,
      `${operation}: the connection tore ${outcome}, injected by the simulation (${this.node})`,
      { operation },
    );
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

  /**
   * A lease- or queue-store round trip: latency, and the connection's tears (it is the same
   * connection as the event store's): refused while it reconnects, and a tear before or after
   * the call took effect. No transient errors or lost acks of their own.
   */
  async pass<T>(operation: string, work: () => Promise<T>): Promise<T> {
    await this.leg();
    this.refuseWhileReconnecting(operation);
    const tear = this.tear();
    if (tear === 'before-commit') {
      await this.leg();
      throw this.tornError(operation, tear);
    }
    const result = await work();
    await this.leg();
    if (tear !== undefined) throw this.tornError(operation, tear);
    return result;
  }

  /**
   * A read round trip: there, the call (failing before it with the seed's probability), back. A
   * tear breaks the answer off mid-page: the query ran, the caller gets an error, never a part.
   */
  async call<T>(operation: string, work: () => Promise<T>): Promise<T> {
    await this.leg();
    this.failBefore(operation);
    const result = await work();
    const tear = this.tear();
    await this.leg();
    if (tear !== undefined) throw this.tornError(operation, 'after-commit');
    return result;
  }

  /**
   * A write round trip that may also lose its acknowledgement after committing, or tear the
   * connection before or after the commit.
   */
  async write<T>(operation: string, work: () => Promise<T>): Promise<T> {
    await this.leg();
    this.failBefore(operation);
    const tear = this.tear();
    if (tear === 'before-commit') {
      await this.leg();
      throw this.tornError(operation, tear);
    }
    const result = await work();
    const lost = tear === undefined && this.loseAck();
    await this.leg();
    if (tear !== undefined) throw this.tornError(operation, tear);
    if (lost) throw this.lostAckError(operation);
    return result;
  }
}
