import { isLoomError } from '@loom/event-runtime';
import type { NodeClock } from '../node-clock.js';
import type { SimNode } from '../sim-node.js';

/** Store errors a client retries: the call may or may not have happened. */
const transientCodes: ReadonlySet<string> = new Set(['STORE_UNAVAILABLE', 'STORE_BUSY']);
/** Attempts before a client gives up on a call (reported as a violation). */
const clientAttemptsMax = 100;
/** Virtual ms a client waits between attempts. */
const clientRetryDelayMs = 200;
/** Virtual ms a client waits for an answer before it calls again (the node may have died). */
const clientCallTimeoutMs = 10_000;

const timedOut = Symbol('timed out');

/**
 * What a client uses of the world it calls into (`SimWorld` is the one there is): declared here,
 * not imported, so that the world and its client do not import each other.
 */
export interface ClientWorld {
  /** A node that runs now, drawn from the seed; undefined when all are paused. */
  runningNode(): SimNode | undefined;
  /** Resolves after `ms` of virtual time. */
  sleep(ms: number): Promise<void>;
  /** Records a broken invariant. */
  violation(invariant: string, detail: string, executionId?: string): void;
}

/**
 * A client of the nodes (an API server, a CLI): it calls a running node, and calls again after a
 * transient store error or no answer, as a careful caller would (starts, signals and enqueues
 * are idempotent by id and key, so a retry after a lost acknowledgement is safe).
 */
export class SimClient {
  constructor(private readonly world: ClientWorld) {}

  /** Calls any running node until the call succeeds; `classify` ends it on an expected error or retries it. */
  async retryAny(
    what: string,
    call: (node: SimNode) => Promise<void>,
    classify: (error: unknown) => 'done' | 'retry' | undefined = () => undefined,
  ): Promise<void> {
    for (let attempt = 1; attempt <= clientAttemptsMax; attempt++) {
      const node = this.world.runningNode();
      if (node !== undefined && (await this.attempt(what, () => call(node), classify))) return;
      await this.world.sleep(clientRetryDelayMs);
    }
    this.world.violation(
      'client-call-failed',
      `${what}: still failing after ${clientAttemptsMax} attempts`,
    );
  }

  /** Calls one node's process (bound to its clock) until it succeeds or that process dies. */
  async retryOn(what: string, clock: NodeClock, call: () => Promise<void>): Promise<void> {
    for (let attempt = 1; attempt <= clientAttemptsMax; attempt++) {
      if (clock.isDead) return;
      if (await this.attempt(what, call, () => (clock.isDead ? 'done' : undefined))) return;
      await this.world.sleep(clientRetryDelayMs);
    }
    if (!clock.isDead) {
      this.world.violation(
        'client-call-failed',
        `${what}: still failing after ${clientAttemptsMax} attempts`,
      );
    }
  }

  /** True when done (succeeded, accepted, or failed for good and reported); false to retry. */
  private async attempt(
    what: string,
    call: () => Promise<void>,
    classify: (error: unknown) => 'done' | 'retry' | undefined,
  ): Promise<boolean> {
    try {
      const outcome = await Promise.race([
        call(),
        this.world.sleep(clientCallTimeoutMs).then(() => timedOut),
      ]);
      return outcome !== timedOut;
    } catch (error) {
      const verdict = classify(error);
      if (verdict !== undefined) return verdict === 'done';
      if (isLoomError(error) && transientCodes.has(error.code)) return false;
      if (isLoomError(error) && error.code === 'RUNTIME_SHUT_DOWN') return true;
      this.world.violation('client-call-failed', `${what}: ${describeError(error)}`);
      return true;
    }
  }
}

/** One line for an error: a LoomError's code and message, else its message. */
export function describeError(error: unknown): string {
  if (isLoomError(error)) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
