// A store decorator for tests of a wait's catch-up (ADR 0060): it holds the first append that
// starts a wait (`loom.wait:…`, its `execution.started` already stamped with its time) until a
// release, which is what a store that refused the write as busy, and the journal's later resend
// with the same time, look like to every other process.
import {
  type AppendGuard,
  type EventEnvelope,
  type EventStore,
  ForwardingEventStore,
  type StoredEvent,
} from '@loom/event-runtime';

export class HeldWaitStart extends ForwardingEventStore {
  private holding = true;
  private heldNow: () => void = () => undefined;
  /** Resolves once the wait's start write is being held. */
  readonly held = new Promise<void>((resolve) => {
    this.heldNow = resolve;
  });

  /** @param release resolves when the held write may go on */
  constructor(
    inner: EventStore,
    private readonly release: Promise<void>,
  ) {
    super(inner);
  }

  override async append(
    envelopes: readonly EventEnvelope[],
    guard?: AppendGuard,
  ): Promise<StoredEvent[]> {
    const startsWait = envelopes.some(
      (envelope) =>
        envelope.type === 'execution.started' && envelope.executionId.startsWith('loom.wait:'),
    );
    if (this.holding && startsWait) {
      this.holding = false;
      this.heldNow();
      await this.release;
    }
    return super.append(envelopes, guard);
  }
}
