import type {
  AppendGuard,
  AppendOutcome,
  AppendRequest,
  BatchAppendingEventStore,
  EventEnvelope,
  EventStore,
  JsonValue,
  StoredEvent,
  TransactionalEventStore,
} from '@loom/event-runtime';
import {
  canAppendBatch,
  ForwardingEventStore,
  isLoomError,
  isTransactional,
  type LoomError,
  recordedPayloadText,
  transactRewriting,
} from '@loom/event-runtime';
import { decodePayload, encodePayload, prepareAppend } from '@loom/event-runtime/store-kit';
import {
  type ContentKey,
  ContentLimits,
  type ContentRef,
  contentKeyOf,
  isContentRef,
  isRecord,
} from './content-ref.js';
import type { ContentStore } from './content-store.js';
import { invalidArgument } from './errors.js';

/** Options of {@link externalizingEventStore}. */
export interface ExternalizingOptions {
  /**
   * A top-level payload field whose JSON (UTF-8) is at least this many bytes moves to the
   * content store. Default `ContentLimits.thresholdBytesDefault` (16 KiB).
   */
  thresholdBytes?: number;
}

// What the kernel reads from an `execution.started` payload into its execution index at append
// time: these stay in the log, whatever their size.
const indexedStartFields = new Set(['flow', 'version']);

/** One field to move: its bytes and the reference that replaces it. */
interface Moved {
  ref: ContentRef;
  bytes: Uint8Array;
}

/**
 * The envelopes with their large fields replaced by references, and the content to store; or
 * undefined when nothing moves (or the input is malformed: then the inner store refuses it with
 * the kernel's own error).
 */
function externalize(
  envelopes: readonly EventEnvelope[],
  thresholdBytes: number,
): { envelopes: EventEnvelope[]; moved: Map<ContentKey, Uint8Array> } | undefined {
  if (!Array.isArray(envelopes)) return undefined;
  let rewritten: EventEnvelope[] | undefined;
  const moved = new Map<ContentKey, Uint8Array>();
  for (let index = 0; index < envelopes.length; index += 1) {
    const envelope = envelopes[index];
    if (typeof envelope !== 'object' || envelope === null || !isRecord(envelope.payload)) continue;
    let found: { payload: Record<string, JsonValue>; fields: Map<string, Moved> } | undefined;
    try {
      found = fieldsToMove(envelope, thresholdBytes);
    } catch {
      return undefined; // not JSON, too deep, …: the inner store says so with its own error
    }
    if (found === undefined) continue;
    rewritten ??= envelopes.slice();
    const payload = found.payload;
    for (const [name, field] of found.fields) {
      payload[name] = { ...field.ref };
      moved.set(field.ref.$content, field.bytes);
    }
    const { executionId, sequence, type, at } = envelope;
    rewritten[index] = {
      executionId,
      sequence,
      type,
      payload,
      ...(at === undefined ? {} : { at }),
    };
  }
  return rewritten === undefined ? undefined : { envelopes: rewritten, moved };
}

/**
 * The fields of one envelope's payload that move, by name, and a fresh copy of the payload as
 * recorded (for the caller to put the references in); undefined when no field moves.
 */
function fieldsToMove(
  envelope: EventEnvelope,
  thresholdBytes: number,
): { payload: Record<string, JsonValue>; fields: Map<string, Moved> } | undefined {
  const live = envelope.payload as Record<string, JsonValue>;
  // The text the runtime recorded, when it built the envelope: the payload object may be an
  // effect's live value that changed since, and the log must keep what the flow saw.
  const recorded = recordedPayloadText(envelope);
  // A payload whose whole text is under the threshold has no field over it: only a value that
  // looks like a reference must still move (so every reference a read meets is a real one).
  const text = recorded ?? encodePayload(live, envelope.executionId, 'snapshotBytesMax');
  const small = Buffer.byteLength(text, 'utf8') < thresholdBytes;
  if (small && !Object.values(live).some(isContentRef)) return undefined;
  const payload = decodePayload(text) as Record<string, JsonValue>;
  let fields: Map<string, Moved> | undefined;
  const started = envelope.type === 'execution.started';
  for (const [name, value] of Object.entries(payload)) {
    if (started && indexedStartFields.has(name)) continue;
    const fieldText = encodePayload(value, envelope.executionId, 'snapshotBytesMax');
    const bytes = new TextEncoder().encode(fieldText);
    if (bytes.byteLength < thresholdBytes && !isContentRef(value)) continue;
    fields ??= new Map();
    fields.set(name, { ref: { $content: contentKeyOf(bytes), bytes: bytes.byteLength }, bytes });
  }
  return fields === undefined ? undefined : { payload, fields };
}

class ExternalizingEventStore extends ForwardingEventStore {
  /** Present when the inner store has it: moves the step's large fields inside its transaction. */
  readonly transact: TransactionalEventStore['transact'] | undefined;
  /** Present when the inner store has it: moves every request's large fields, then one batch. */
  readonly appendBatch: BatchAppendingEventStore['appendBatch'] | undefined;

  constructor(
    inner: EventStore,
    private readonly content: ContentStore,
    private readonly thresholdBytes: number,
  ) {
    super(inner);
    if (isTransactional(inner))
      this.transact = (work, envelopes, guard) =>
        transactRewriting(inner, work, envelopes, guard, (list, canAwait) =>
          this.rewriteInTransaction(list, guard, canAwait),
        );
    if (canAppendBatch(inner)) this.appendBatch = (requests) => this.batch(inner, requests);
  }

  override async append(
    envelopes: readonly EventEnvelope[],
    guard?: AppendGuard,
  ): Promise<StoredEvent[]> {
    return this.inner.append(await this.moved(envelopes, guard, this.thresholdBytes), guard);
  }

  /**
   * The envelopes with their large fields in the content store, or as they are when nothing
   * moves. Bad input is refused with the kernel's error before any content is written.
   */
  private async moved(
    envelopes: readonly EventEnvelope[],
    guard: AppendGuard | undefined,
    thresholdBytes: number,
  ): Promise<readonly EventEnvelope[]> {
    const plan = externalize(envelopes, thresholdBytes);
    if (plan === undefined) return envelopes;
    prepareAppend(plan.envelopes, guard, 0);
    await Promise.all([...plan.moved.values()].map((bytes) => this.content.put(bytes)));
    return plan.envelopes;
  }

  /**
   * A transactional step's envelopes, inside its transaction. With an asynchronous `work`
   * (Postgres) the content is put there, before the commit. With a synchronous one (SQLite:
   * better-sqlite3 cannot await inside a transaction) no content can be put: large fields stay
   * in the log (still correct, only not moved), and only a value that looks like a reference
   * must move, so that one goes the asynchronous way (which SQLite refuses).
   */
  private rewriteInTransaction(
    envelopes: readonly EventEnvelope[],
    guard: AppendGuard | undefined,
    canAwait: boolean,
  ): readonly EventEnvelope[] | Promise<readonly EventEnvelope[]> {
    if (canAwait || externalize(envelopes, Number.POSITIVE_INFINITY) !== undefined)
      return this.moved(envelopes, guard, this.thresholdBytes);
    return envelopes;
  }

  /** Each request's fields moved (a request refused on the way gets its error), one batch. */
  private async batch(
    inner: BatchAppendingEventStore,
    requests: readonly AppendRequest[],
  ): Promise<AppendOutcome[]> {
    if (!Array.isArray(requests)) return inner.appendBatch(requests);
    const prepared = await Promise.all(
      requests.map(async (request): Promise<AppendRequest | LoomError> => {
        try {
          const envelopes = await this.moved(
            request?.envelopes,
            request?.guard,
            this.thresholdBytes,
          );
          return envelopes === request.envelopes ? request : { envelopes, guard: request.guard };
        } catch (error) {
          if (isLoomError(error)) return error;
          throw error;
        }
      }),
    );
    const sent = prepared.filter((entry): entry is AppendRequest => !isLoomError(entry));
    const outcomes = sent.length === 0 ? [] : await inner.appendBatch(sent);
    let next = 0;
    return prepared.map((entry) =>
      isLoomError(entry) ? { ok: false, error: entry } : (outcomes[next++] as AppendOutcome),
    );
  }
}

/**
 * Wraps an event store so that every top-level payload field of at least `thresholdBytes`
 * (its JSON, UTF-8) is put in `content` and replaced in the log by a {@link ContentRef}
 * (`{ $content: 'sha256:…', bytes }`). Identical content is stored once. The hash chain covers
 * the event as stored, with the reference (ADR 0037). Reads return what is stored; wrap the
 * result in {@link contentResolvingEventStore} to get the content back.
 *
 * Not moved: payloads that are not objects, signal payloads, and `flow`/`version` of
 * `execution.started` (the kernel indexes them). A field that already looks like a reference
 * always moves, so a read never mistakes data for a reference. `transact` and `appendBatch` are
 * offered when the inner store has them and move fields the same way; a transactional step on
 * SQLite (synchronous transaction) keeps its large fields in the log (ADR 0037).
 *
 * Error codes: `INVALID_ARGUMENT` (a bad `thresholdBytes`); the inner store's and the content
 * store's errors. Bad input is refused before any content is written.
 *
 * @example
 * const store = contentResolvingEventStore(
 *   externalizingEventStore(events, content, { thresholdBytes: 32_768 }),
 *   content,
 * );
 */
export function externalizingEventStore(
  inner: EventStore,
  content: ContentStore,
  options: ExternalizingOptions = {},
): EventStore {
  const thresholdBytes = options.thresholdBytes ?? ContentLimits.thresholdBytesDefault;
  if (!Number.isSafeInteger(thresholdBytes) || thresholdBytes < 1)
    throw invalidArgument(
      'thresholdBytes',
      'thresholdBytes must be a positive integer (bytes of a field’s JSON)',
      thresholdBytes,
    );
  return new ExternalizingEventStore(inner, content, thresholdBytes);
}
