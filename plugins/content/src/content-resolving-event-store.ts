import type {
  AppendGuard,
  AppendOutcome,
  BatchAppendingEventStore,
  EventEnvelope,
  EventStore,
  JsonValue,
  ReadAllOptions,
  ReadOptions,
  StoredEvent,
  SubscribeOptions,
  Subscription,
  SubscriptionHandler,
  TransactionalEventStore,
} from '@loom/event-runtime';
import { canAppendBatch, ForwardingEventStore, isTransactional } from '@loom/event-runtime';
import { decodePayload } from '@loom/event-runtime/store-kit';
import {
  type ContentKey,
  contentKeyOf,
  isContentRef,
  isRecord,
  type MissingContent,
} from './content-ref.js';
import type { ContentStore } from './content-store.js';
import { ContentErrorCode, LoomError } from './errors.js';
import { fetchMany } from './internal/fetch-many.js';

/** The distinct content keys referenced by top-level payload fields of `events`. */
function referencedKeys(events: readonly StoredEvent[]): Set<ContentKey> {
  const keys = new Set<ContentKey>();
  for (const event of events) {
    if (!isRecord(event.payload)) continue;
    for (const value of Object.values(event.payload))
      if (isContentRef(value)) keys.add(value.$content);
  }
  return keys;
}

class ContentResolvingEventStore extends ForwardingEventStore {
  // Gets in flight, by key: concurrent reads of one key share one `get` (stores without getMany).
  private readonly inFlight = new Map<ContentKey, Promise<Uint8Array | undefined>>();
  /** Present when the inner store has it: the step's events come back resolved. */
  readonly transact: TransactionalEventStore['transact'] | undefined;
  /** Present when the inner store has it: every committed request's events come back resolved. */
  readonly appendBatch: BatchAppendingEventStore['appendBatch'] | undefined;

  constructor(
    inner: EventStore,
    private readonly content: ContentStore,
  ) {
    super(inner);
    if (isTransactional(inner))
      this.transact = async (work, envelopes, guard) => {
        const { result, stored } = await inner.transact(work, envelopes, guard);
        return { result, stored: await this.resolve(stored) };
      };
    if (canAppendBatch(inner))
      this.appendBatch = async (requests) =>
        Promise.all(
          (await inner.appendBatch(requests)).map(
            async (outcome): Promise<AppendOutcome> =>
              outcome.ok ? { ok: true, stored: await this.resolve(outcome.stored) } : outcome,
          ),
        );
  }

  override async append(
    envelopes: readonly EventEnvelope[],
    guard?: AppendGuard,
  ): Promise<StoredEvent[]> {
    return this.resolve(await this.inner.append(envelopes, guard));
  }

  override async read(executionId: string, options?: ReadOptions): Promise<StoredEvent[]> {
    return this.resolve(await this.inner.read(executionId, options));
  }

  override async readAll(options?: ReadAllOptions): Promise<StoredEvent[]> {
    return this.resolve(await this.inner.readAll(options));
  }

  override subscribe(options: SubscribeOptions, handler: SubscriptionHandler): Subscription {
    return this.inner.subscribe(options, async (events) => handler(await this.resolve(events)));
  }

  /**
   * Two phases per batch: collect the distinct keys of the whole batch, fetch them in one
   * `getMany` (or coalesced parallel `get`s), then substitute. A batch without references is
   * returned as it is.
   */
  private async resolve(events: StoredEvent[]): Promise<StoredEvent[]> {
    const keys = referencedKeys(events);
    if (keys.size === 0) return events;
    const texts = await this.fetchTexts([...keys]);
    return events.map((event) => {
      if (!isRecord(event.payload)) return event;
      let payload: Record<string, JsonValue> | undefined;
      for (const [name, value] of Object.entries(event.payload)) {
        if (!isContentRef(value)) continue;
        payload ??= { ...event.payload };
        const text = texts.get(value.$content);
        const missing: MissingContent = {
          $content: value.$content,
          bytes: value.bytes,
          missing: true,
        };
        payload[name] =
          text === undefined ? (missing as unknown as JsonValue) : decodePayload(text);
      }
      return payload === undefined ? event : { ...event, payload };
    });
  }

  /** The content of `keys` as text, each checked against its key; missing content is absent. */
  private async fetchTexts(keys: ContentKey[]): Promise<Map<ContentKey, string>> {
    const found = await fetchMany(this.content, keys, (key) => this.coalescedGet(key));
    const texts = new Map<ContentKey, string>();
    const decoder = new TextDecoder('utf-8', { fatal: false });
    for (const [key, bytes] of found) {
      const actual = contentKeyOf(bytes);
      if (actual !== key) {
        throw new LoomError(
          ContentErrorCode.CONTENT_CORRUPT,
          `the ${this.content.backend} content store returned bytes for ${key} whose sha-256 is ${actual}: the store is corrupt; restore the content from a backup`,
          { ref: key, actual },
        );
      }
      texts.set(key, decoder.decode(bytes));
    }
    return texts;
  }

  private coalescedGet(key: ContentKey): Promise<Uint8Array | undefined> {
    const pending = this.inFlight.get(key);
    if (pending !== undefined) return pending;
    const started = this.content.get(key).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, started);
    return started;
  }
}

/**
 * Wraps an event store whose log holds {@link ContentRef}s (written through
 * {@link externalizingEventStore}) so that `append`, `read`, `readAll` and `subscribe` return
 * the content in their place. Per batch it collects the distinct references, fetches them with
 * one `getMany` round trip (or, for a store without `getMany`, one `get` per key in parallel,
 * shared with concurrent reads of the same key), then substitutes them. Content that is gone
 * reads as a {@link MissingContent} marker; `verify` checks the log as stored, so it passes
 * after a delete.
 *
 * Error codes: `CONTENT_CORRUPT` (bytes that do not match their key: never served), and the
 * inner store's and content store's errors.
 *
 * @example
 * const store = contentResolvingEventStore(externalizingEventStore(events, content), content);
 */
export function contentResolvingEventStore(inner: EventStore, content: ContentStore): EventStore {
  return new ContentResolvingEventStore(inner, content);
}
