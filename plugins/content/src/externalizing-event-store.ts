import type {
  AppendGuard,
  EventEnvelope,
  EventStore,
  JsonValue,
  StoredEvent,
} from '@loom/event-runtime';
import { ForwardingEventStore } from '@loom/event-runtime';
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

// The runtime leaves the exact text it recorded on the envelopes it builds, under a symbol the
// kernel does not export; when present it is what the log must keep (the payload object may be
// an effect's live value that changed since).
function recordedTextOf(envelope: EventEnvelope): string | undefined {
  for (const symbol of Object.getOwnPropertySymbols(envelope)) {
    if (symbol.description === 'loom.payloadText') {
      const text = (envelope as unknown as Record<symbol, unknown>)[symbol];
      return typeof text === 'string' ? text : undefined;
    }
  }
  return undefined;
}

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
  const recorded = recordedTextOf(envelope);
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
  constructor(
    inner: EventStore,
    private readonly content: ContentStore,
    private readonly thresholdBytes: number,
  ) {
    super(inner);
  }

  override async append(
    envelopes: readonly EventEnvelope[],
    guard?: AppendGuard,
  ): Promise<StoredEvent[]> {
    const plan = externalize(envelopes, this.thresholdBytes);
    if (plan === undefined) return this.inner.append(envelopes, guard);
    // Refuse bad input with the kernel's error before any content is written.
    prepareAppend(plan.envelopes, guard, 0);
    await Promise.all([...plan.moved.values()].map((bytes) => this.content.put(bytes)));
    return this.inner.append(plan.envelopes, guard);
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
 * always moves, so a read never mistakes data for a reference. The store offers no `transact`.
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
