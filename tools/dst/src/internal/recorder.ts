import type { AppendGuard, EventEnvelope, QueueItem, StoredEvent } from '@loom/event-runtime';
import type { FaultCounts } from '../faults.js';
import { emptyFaultCounts } from '../faults.js';

/** One append the store committed: who wrote it, under which fence epoch. */
export interface CommittedAppend {
  executionId: string;
  firstSequence: number;
  types: string[];
  node: string;
  fenceEpoch: number | undefined;
  /** Place in the commit order shared with fence advances. */
  order: number;
  /** Virtual time of the commit (0 when the recorder has no clock). */
  atMs: number;
}

/** A queue claim and how many of the queue's items were under a live claim right after it. */
export interface ClaimObservation {
  queue: string;
  claimedNow: number;
  concurrencyMax: number | undefined;
  /**
   * Per key (`partitionKey`) whose items carry their own limit (a flow's per-key `concurrency`,
   * ADR 0059): its items under a live claim right after the claim, and the lowest limit among
   * them.
   */
  keys: Array<{ key: string; claimed: number; limit: number }>;
  /**
   * Per throttle key (a flow's per-key `throttle`, ADR 0059): its items whose latest claim is
   * within the window right after the claim, and the lowest count among them. Absent in
   * hand-made observations.
   */
  throttles?: Array<{ key: string; started: number; limit: number }>;
  /**
   * Per debounced item this claim took (a flow's `debounce`, ADR 0059): whether the input it was
   * claimed with is the last one the store applied to it, and whether it was due. Absent in
   * hand-made observations.
   */
  debounced?: Array<{ itemId: string; lastInput: boolean; due: boolean }>;
  atMs: number;
}

/** A signal a client sent, as the client saw it acknowledged. */
export interface SentSignal {
  executionId: string;
  name: string;
  idempotencyKey: string | undefined;
}

/** What the simulated stores and clients saw, for the invariant checks after the seed. */
export class Recorder {
  /**
   * `executionId/sequence` → the hashes of every event whose append was acknowledged to a caller
   * at that place (more than one only if the store acknowledged a write it did not keep).
   */
  readonly acked = new Map<string, string[]>();
  readonly committed: CommittedAppend[] = [];
  /** Fence advances in commit order: `fences.advance` returned this epoch for this execution. */
  readonly advances: Array<{
    executionId: string;
    epoch: number;
    node: string;
    order: number;
    /** Virtual time of the advance (0 when the recorder has no clock). */
    atMs: number;
  }> = [];
  readonly claims: ClaimObservation[] = [];
  /** Queue → the ids of the items enqueued into it (by any node), for the per-key counts. */
  readonly enqueued = new Map<string, Set<string>>();
  /**
   * Items read back in the store's final state, `done` (the memory store never changes a done row
   * again), by item id: the claim observations read each of them once instead of at every claim.
   */
  readonly finishedItems = new Map<string, QueueItem>();
  /**
   * Debounced item → the input (JSON) of the last enqueue the store applied to it, whether a
   * claim took it, and how many enqueues were applied to it after that (a store that updates a
   * claimed item would run it with a stale input).
   */
  readonly debounced = new Map<
    string,
    { lastInput: string; claimed: boolean; appliedAfterClaim: number }
  >();
  readonly signals: SentSignal[] = [];
  readonly faults: FaultCounts = emptyFaultCounts();
  /**
   * Writes that carried the appends of several executions (a runtime's group commit,
   * `appendBatch`), the appends they carried, and how many of those writes failed as a whole
   * (refused, torn, or committed with the answer lost).
   */
  readonly batches = { writes: 0, appends: 0, failed: 0 };
  /** Executions whose terminal event committed: the run loop's "done" test reads it. */
  readonly settled = new Set<string>();
  private order = 0;

  /** `now`: the virtual clock, to stamp each commit with its time. */
  constructor(private readonly now: () => number = () => 0) {}

  commit(node: string, envelopes: readonly EventEnvelope[], guard: AppendGuard | undefined): void {
    const first = envelopes[0];
    if (first === undefined) return;
    this.committed.push({
      executionId: first.executionId,
      firstSequence: first.sequence,
      types: envelopes.map((envelope) => envelope.type),
      node,
      fenceEpoch: guard?.fenceEpoch,
      order: this.order++,
      atMs: this.now(),
    });
    for (const envelope of envelopes) {
      if (terminalTypes.has(envelope.type)) this.settled.add(envelope.executionId);
    }
  }

  advance(node: string, executionId: string, epoch: number): void {
    this.advances.push({ executionId, epoch, node, order: this.order++, atMs: this.now() });
  }

  ack(stored: readonly StoredEvent[]): void {
    for (const event of stored) {
      const key = `${event.executionId}/${event.sequence}`;
      const hashes = this.acked.get(key);
      if (hashes === undefined) this.acked.set(key, [event.hash]);
      else if (!hashes.includes(event.hash)) hashes.push(event.hash);
    }
  }
}

/** The events that end an execution. */
export const terminalTypes: ReadonlySet<string> = new Set([
  'execution.completed',
  'execution.failed',
  'execution.cancelled',
  'execution.continued_as_new',
]);
