import {
  type AppendGuard,
  type AppendOutcome,
  type AppendRequest,
  type BatchAppendingEventStore,
  type ClaimDueOptions,
  canAppendBatch,
  type EventEnvelope,
  type EventStore,
  type FenceStore,
  type FindExecutionsOptions,
  isLoomError,
  type LoomError,
  type PrunedExecution,
  type PruneOptions,
  type ReadAllOptions,
  type ReadOptions,
  type ReadSignalsOptions,
  type SignalInput,
  type StoredEvent,
  type SubscribeOptions,
  type Subscription,
  type SubscriptionHandler,
  type VerifyResult,
} from '@loom/event-runtime';
import type { Faults } from './faults.js';
import type { StoreLink } from './internal/store-link.js';

/**
 * One node's handle on the shared in-memory event log, through a {@link StoreLink}: every call
 * pays latency, may fail before it is made, writes may lose their acknowledgement after
 * committing, and the connection may tear mid-call (a write's outcome unknown to the caller, a
 * read's answer broken off) and refuse calls until it has reconnected. It records what it committed (with the writer's fence epoch) and what it
 * acknowledged, for the invariant checks.
 */
export class SimEventStore implements BatchAppendingEventStore {
  readonly backend = 'simulated-memory';
  readonly fences: FenceStore;

  constructor(
    private readonly inner: EventStore,
    private readonly link: StoreLink,
    private readonly bug: Faults['injectBug'],
  ) {
    this.fences = {
      current: (executionId) =>
        link.call('fences.current', () => inner.fences.current(executionId)),
      advance: (executionId) =>
        link.write('fences.advance', async () => {
          const epoch = await inner.fences.advance(executionId);
          link.recorder.advance(link.node, executionId, epoch);
          return epoch;
        }),
    };
  }

  async append(envelopes: readonly EventEnvelope[], guard?: AppendGuard): Promise<StoredEvent[]> {
    const { link } = this;
    await link.leg();
    link.failBefore('append');
    if (this.bug === 'drop-acked-append' && link.bugStrikes(0.02)) {
      // The bug: acknowledge without writing.
      const stored = envelopes.map((envelope) => ({
        ...envelope,
        at: envelope.at ?? 0,
        position: -1,
        prevHash: null,
        hash: 'never-written',
      }));
      link.recorder.ack(stored);
      return stored;
    }
    let sent = guard;
    let stale = false;
    if (this.bug === 'ignore-fence' && guard?.fenceEpoch !== undefined && !link.healed) {
      // The bug: the writer's epoch is not checked.
      const current = await this.inner.fences.current(envelopes[0]?.executionId ?? '');
      stale = current !== guard.fenceEpoch;
      sent = { ...guard, fenceEpoch: current };
    }
    const tear = link.tear();
    if (tear === 'before-commit') {
      await link.leg();
      throw link.tornError('append', tear);
    }
    const stored = await this.inner.append(envelopes, sent);
    if (stale) link.recorder.faults.bugs += 1;
    link.recorder.commit(link.node, envelopes, guard);
    const lost = tear === undefined && link.loseAck();
    await link.leg();
    if (tear !== undefined) throw link.tornError('append', tear);
    if (lost) throw link.lostAckError('append');
    link.recorder.ack(stored);
    return stored;
  }

  /**
   * A runtime's group commit (ADR 0040): the requests of one turn in one write, which fails,
   * tears or loses its acknowledgement as a whole, as one statement over a real connection
   * would; refusals (fence, sequence) are per request. With a bug injected, each request goes
   * through {@link append} one after another, so the bug meets every write.
   */
  async appendBatch(requests: readonly AppendRequest[]): Promise<AppendOutcome[]> {
    const { link, inner } = this;
    if (this.bug !== undefined || !canAppendBatch(inner)) {
      const outcomes: AppendOutcome[] = [];
      for (const request of requests) {
        try {
          outcomes.push({ ok: true, stored: await this.append(request.envelopes, request.guard) });
        } catch (error) {
          if (!isRefusal(error)) throw error;
          outcomes.push({ ok: false, error });
        }
      }
      return outcomes;
    }
    const { batches } = link.recorder;
    batches.writes += 1;
    batches.appends += requests.length;
    await link.leg();
    try {
      link.failBefore('appendBatch');
    } catch (error) {
      batches.failed += 1;
      throw error;
    }
    const tear = link.tear();
    if (tear === 'before-commit') {
      batches.failed += 1;
      await link.leg();
      throw link.tornError('appendBatch', tear);
    }
    const outcomes = await inner.appendBatch(requests);
    outcomes.forEach((outcome, index) => {
      const request = requests[index] as AppendRequest;
      if (outcome.ok) link.recorder.commit(link.node, request.envelopes, request.guard);
    });
    const lost = tear === undefined && link.loseAck();
    if (tear !== undefined || lost) batches.failed += 1;
    await link.leg();
    if (tear !== undefined) throw link.tornError('appendBatch', tear);
    if (lost) throw link.lostAckError('appendBatch');
    for (const outcome of outcomes) if (outcome.ok) link.recorder.ack(outcome.stored);
    return outcomes;
  }

  read(executionId: string, options?: ReadOptions): Promise<StoredEvent[]> {
    return this.link.call('read', () => this.inner.read(executionId, options));
  }

  readAll(options?: ReadAllOptions): Promise<StoredEvent[]> {
    return this.link.call('readAll', () => this.inner.readAll(options));
  }

  findExecutions(options: FindExecutionsOptions) {
    return this.link.call('findExecutions', () => this.inner.findExecutions(options));
  }

  sendSignal(signal: SignalInput) {
    return this.link.write('sendSignal', () => this.inner.sendSignal(signal));
  }

  readSignals(executionId: string, options?: ReadSignalsOptions) {
    return this.link.call('readSignals', () => this.inner.readSignals(executionId, options));
  }

  claimDue(nowMs: number, limit: number, options?: ClaimDueOptions): Promise<string[]> {
    return this.link.write('claimDue', () => this.inner.claimDue(nowMs, limit, options));
  }

  unclaimDue(executionIds: readonly string[], nowMs: number): Promise<string[]> {
    return this.link.write('unclaimDue', () => this.inner.unclaimDue(executionIds, nowMs));
  }

  prune(options: PruneOptions): Promise<PrunedExecution[]> {
    return this.link.write('prune', () => this.inner.prune(options));
  }

  subscribe(options: SubscribeOptions, handler: SubscriptionHandler): Subscription {
    return this.inner.subscribe(options, handler);
  }

  verify(executionId: string): Promise<VerifyResult> {
    return this.inner.verify(executionId);
  }

  /** A node letting go of its handle; the shared log stays open for the other nodes. */
  async close(): Promise<void> {}
}

const refusalCodes: ReadonlySet<string> = new Set([
  'FENCE_STALE',
  'SEQUENCE_CONFLICT',
  'EXECUTION_ALREADY_STARTED',
  'INVALID_ENVELOPE',
  'INVALID_ARGUMENT',
  'PAYLOAD_NOT_JSON',
  'LIMIT_EXCEEDED',
]);

/** An append's own refusal (its fence, its sequence, its input), not the link failing. */
function isRefusal(error: unknown): error is LoomError {
  return isLoomError(error) && refusalCodes.has(error.code);
}
