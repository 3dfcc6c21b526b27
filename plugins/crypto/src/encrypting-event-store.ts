import type {
  AppendGuard,
  AppendOutcome,
  AppendRequest,
  BatchAppendingEventStore,
  EventEnvelope,
  EventStore,
  JsonValue,
  ReadAllOptions,
  ReadOptions,
  ReadSignalsOptions,
  SignalInput,
  StoredEvent,
  StoredSignal,
  SubscribeOptions,
  Subscription,
  SubscriptionHandler,
  TransactionalEventStore,
} from '@loom/event-runtime';
import {
  canAppendBatch,
  ErrorCode,
  ForwardingEventStore,
  isLoomError,
  isTransactional,
  type LoomError,
  recordedPayloadText,
  transactRewriting,
} from '@loom/event-runtime';
import { decodePayload } from '@loom/event-runtime/store-kit';
import { CryptoErrorCode, CryptoLimits, cryptoError } from './errors.js';
import {
  erased,
  type FieldPlace,
  fieldKeyRef,
  isEncryptedField,
  isErased,
  openField,
  sealField,
} from './field-cipher.js';
import { type MarkedVisitor, mapMarked, Pending, type Slot } from './internal/map-marked.js';
import { checkSubject } from './internal/subject.js';
import type { DataKey, ForgetResult, KeyRef, Keyring } from './keyring.js';
import { keyRefId } from './keyring.js';
import {
  type CompiledRule,
  compileSensitiveFields,
  type SensitiveFields,
} from './sensitive-fields.js';

/** A marked envelope of an append, its rule and its index in the batch. */
type Marked = [EventEnvelope, CompiledRule, number];

/** An append's envelopes with their sensitive fields sealed, and what it takes to undo that. */
interface Sealing {
  /** The envelopes to write: the sealed ones are copies. */
  written: EventEnvelope[];
  sealed: Set<EventEnvelope>;
  /** The JSON text of each sealed field in walk order, to give the caller its events back. */
  texts: string[];
}

/** Most subjects whose current key a store keeps for transactional steps on SQLite. */
const cachedKeysMax = 4096;

/** Options of {@link encryptingEventStore}. */
export interface EncryptingEventStoreOptions {
  /** Per event type, the subject and the payload paths to encrypt. */
  sensitive: SensitiveFields;
  /** Where the subjects' data keys live. */
  keyring: Keyring;
}

/** The event type of an erasure receipt. */
export const erasureReceiptType = 'crypto.subject_forgotten';

/**
 * The key of a `sensitive` entry that marks the payload of signals named `name` in the signal
 * inbox (`sendSignal`, `readSignals`): `signal:<name>`. Its subject path and fields are paths
 * in the signal's payload.
 *
 * @example
 * const sensitive = { [signalRuleType('confirm')]: { subject: 'userId', fields: ['email'] } };
 */
export function signalRuleType(name: string): string {
  return `signal:${name}`;
}

/** The execution an erasure receipt of `subject` is appended to (sequence 0, once). */
export function erasureReceiptId(subject: string): string {
  return `loom-erasure:${subject}`;
}

/** What {@link EncryptingEventStore.forget} did. */
export interface ErasureReceipt extends ForgetResult {
  /** The execution holding the receipt event. */
  receiptExecutionId: string;
  /** When the receipt was first written (epoch ms). */
  at: number;
}

/**
 * An `EventStore` that encrypts the sensitive fields of the event types `sensitive` names
 * (AES-256-GCM, one data key per subject) and decrypts them on `read`, `readAll` and
 * `subscribe`, with one keyring lookup per batch. Everything else passes to `inner` unchanged:
 * the inner store hashes what it stores (ciphertext), so `verify` holds before and after a
 * subject is forgotten. A field whose subject was forgotten reads as an {@link Erased} marker.
 *
 * Not forwarded: `transact` (an exactly-once step builds its events synchronously inside the
 * database transaction, where no key can be fetched) and `appendBatch`.
 *
 * Error codes: `INVALID_ARGUMENT` (a bad `sensitive` map), `CRYPTO_SUBJECT_MISSING`,
 * `SUBJECT_FORGOTTEN` (append), `CRYPTO_INTEGRITY`, `KEY_NOT_FOUND` (reads), the keyring's and
 * the inner store's codes.
 */
export class EncryptingEventStore extends ForwardingEventStore {
  readonly #rules: ReadonlyMap<string, CompiledRule>;
  /**
   * Current data keys this store fetched, by subject (or the `SUBJECT_FORGOTTEN` refusal it got
   * for one): what a transactional step on SQLite seals with, since better-sqlite3's transaction
   * cannot await the keyring. `forget` drops the subject's entry.
   */
  readonly #keys = new Map<string, DataKey | LoomError>();
  /** Present when the inner store has it: seals the events of an exactly-once step. */
  readonly transact: TransactionalEventStore['transact'] | undefined;
  /** Present when the inner store has it: seals every request's events, then one batch. */
  readonly appendBatch: BatchAppendingEventStore['appendBatch'] | undefined;

  constructor(
    inner: EventStore,
    readonly keyring: Keyring,
    sensitive: SensitiveFields,
  ) {
    super(inner);
    this.#rules = compileSensitiveFields(sensitive);
    if (isTransactional(inner))
      this.transact = (work, envelopes, guard) => this.#transact(inner, work, envelopes, guard);
    if (canAppendBatch(inner)) this.appendBatch = (requests) => this.#appendBatch(inner, requests);
  }

  override append(
    envelopes: readonly EventEnvelope[],
    guard?: AppendGuard,
  ): Promise<StoredEvent[]> {
    const marked = this.#markedOf(envelopes);
    // Not async on this path: an unmarked append costs the lookups and no promise of its own.
    if (marked === undefined) return this.inner.append(envelopes, guard);
    return this.#appendSealed(envelopes, marked, guard);
  }

  async #appendSealed(
    envelopes: readonly EventEnvelope[],
    marked: readonly Marked[],
    guard: AppendGuard | undefined,
  ): Promise<StoredEvent[]> {
    const sealing = await this.#sealFetching(envelopes, marked);
    return this.#restore(await this.inner.append(sealing.written, guard), sealing);
  }

  /**
   * `transact` through the inner store, the step's events sealed inside its transaction. When
   * `work` is asynchronous the keys are fetched there; when it is synchronous (SQLite) they come
   * from this store's cache, and a subject not in it fails the step with `CRYPTO_KEY_NOT_READY`
   * (its key is fetched meanwhile, so a retry finds it).
   */
  async #transact<T>(
    inner: TransactionalEventStore,
    work: (tx: unknown) => T | Promise<T>,
    envelopes: (result: T) => readonly EventEnvelope[],
    guard: AppendGuard | undefined,
  ): Promise<{ result: T; stored: StoredEvent[] }> {
    if (this.#rules.size === 0) return inner.transact(work, envelopes, guard);
    let sealing: Sealing | undefined;
    let uncached: string | undefined;
    try {
      const { result, stored } = await transactRewriting(
        inner,
        work,
        envelopes,
        guard,
        (list, canAwait) => {
          const marked = this.#markedOf(list);
          if (marked === undefined) return list;
          if (!canAwait) {
            const keys = this.#cachedKeys(marked);
            if (typeof keys !== 'string') {
              sealing = this.#seal(list, marked, keys);
              return sealing.written;
            }
            uncached = keys;
          }
          return this.#sealFetching(list, marked).then((done) => {
            sealing = done;
            return done.written;
          });
        },
      );
      return { result, stored: sealing === undefined ? stored : this.#restore(stored, sealing) };
    } catch (error) {
      if (uncached !== undefined && isLoomError(error, ErrorCode.INVALID_ARGUMENT)) {
        throw cryptoError(
          CryptoErrorCode.CRYPTO_KEY_NOT_READY,
          `a transactional step's events for subject '${uncached}' must be encrypted inside the store's synchronous transaction (SQLite), where the keyring cannot be awaited, and this store has not fetched that subject's key yet. Nothing was written; the key is being fetched now, so a retry of the step finds it`,
          { subject: uncached },
          error,
        );
      }
      throw error;
    }
  }

  /**
   * `appendBatch` through the inner store: each request's events sealed first (a request this
   * store refuses, e.g. `CRYPTO_SUBJECT_MISSING`, gets that error as its outcome and is not
   * sent), then one batch; outcomes in request order, with the plaintext given back.
   */
  async #appendBatch(
    inner: BatchAppendingEventStore,
    requests: readonly AppendRequest[],
  ): Promise<AppendOutcome[]> {
    if (this.#rules.size === 0 || !Array.isArray(requests)) return inner.appendBatch(requests);
    const prepared = await Promise.all(
      requests.map(
        async (
          request,
        ): Promise<{ request: AppendRequest; sealing?: Sealing } | { error: LoomError }> => {
          const marked = this.#markedOf(request?.envelopes);
          if (marked === undefined) return { request };
          try {
            const sealing = await this.#sealFetching(request.envelopes, marked);
            return { request: { envelopes: sealing.written, guard: request.guard }, sealing };
          } catch (error) {
            if (isLoomError(error)) return { error };
            throw error;
          }
        },
      ),
    );
    const sent = prepared.flatMap((entry) => ('request' in entry ? [entry.request] : []));
    const outcomes = sent.length === 0 ? [] : await inner.appendBatch(sent);
    let next = 0;
    return prepared.map((entry): AppendOutcome => {
      if ('error' in entry) return { ok: false, error: entry.error };
      const outcome = outcomes[next++] as AppendOutcome;
      if (!outcome.ok || entry.sealing === undefined) return outcome;
      return { ok: true, stored: this.#restore(outcome.stored, entry.sealing) };
    });
  }

  /**
   * The keys of a batch's subjects, fetched at once, then the batch sealed. A missing subject
   * or a forgotten one is kept as its error and raised only when the walk finds a value to seal:
   * an event whose marked fields are absent needs no subject, and an `Erased` marker carried
   * forward (a replay after erasure) needs no key.
   */
  async #sealFetching(envelopes: readonly EventEnvelope[], marked: readonly Marked[]) {
    const keys = new Map<string, Promise<DataKey | LoomError>>();
    const resolved: Array<Promise<DataKey | LoomError>> = new Array(marked.length);
    for (let index = 0; index < marked.length; index++) {
      const [envelope, rule] = marked[index] as Marked;
      const subject = subjectOfEvent(envelope, rule);
      if (typeof subject !== 'string') {
        resolved[index] = Promise.resolve(subject);
        continue;
      }
      let key = keys.get(subject);
      if (key === undefined) {
        key = this.keyring.current(subject).then(
          (found) => {
            this.#remember(subject, found);
            return found;
          },
          (error: unknown) => {
            const refusal = forgottenOnly(error);
            this.#remember(subject, refusal);
            return refusal;
          },
        );
        keys.set(subject, key);
      }
      resolved[index] = key;
    }
    return this.#seal(envelopes, marked, await Promise.all(resolved));
  }

  /** The cached keys of a batch's subjects (or their errors), or the first subject not cached. */
  #cachedKeys(marked: readonly Marked[]): Array<DataKey | LoomError> | string {
    const keys: Array<DataKey | LoomError> = [];
    for (const [envelope, rule] of marked) {
      const subject = subjectOfEvent(envelope, rule);
      if (typeof subject !== 'string') {
        keys.push(subject);
        continue;
      }
      const key = this.#keys.get(subject);
      if (key === undefined) return subject;
      keys.push(key);
    }
    return keys;
  }

  #remember(subject: string, key: DataKey | LoomError): void {
    if (!this.#keys.has(subject) && this.#keys.size >= cachedKeysMax) {
      const oldest = this.#keys.keys().next().value;
      if (oldest !== undefined) this.#keys.delete(oldest);
    }
    this.#keys.set(subject, key);
  }

  /** Seals the marked envelopes with their keys (synchronous: it runs inside transactions). */
  #seal(
    envelopes: readonly EventEnvelope[],
    marked: readonly Marked[],
    keys: ReadonlyArray<DataKey | LoomError>,
  ): Sealing {
    const written = envelopes.slice();
    const texts: string[] = [];
    const sealed = new Set<EventEnvelope>();
    for (let index = 0; index < marked.length; index++) {
      const [envelope, rule, position] = marked[index] as Marked;
      const key = keys[index] as DataKey | LoomError;
      const place = placeOf(envelope, '');
      // `envelope` is as recorded (see `recordedOf`): unchanged, the caller's one is written.
      const payload = mapMarked(envelope.payload, rule.roots, sealVisitor(key, place, texts), []);
      if (payload === envelope.payload) continue;
      const copy = withPayload(envelope, payload);
      written[position] = copy;
      sealed.add(copy);
    }
    return { written, sealed, texts };
  }

  /** The stored events with the sealed fields' plaintext put back, as the caller gave it. */
  #restore(stored: StoredEvent[], { written, sealed, texts }: Sealing): StoredEvent[] {
    if (sealed.size === 0) return stored;
    let next = 0;
    return stored.map((event, index) => {
      const envelope = written[index];
      if (envelope === undefined || !sealed.has(envelope)) return event;
      const rule = this.#rules.get(event.type) as CompiledRule;
      const payload = mapMarked(
        event.payload,
        rule.roots,
        plaintextVisitor(texts, () => next++),
        [],
      );
      return { ...event, payload };
    });
  }

  /**
   * Seals the payload of a signal whose name has a `signal:<name>` entry in `sensitive` before
   * it goes to the inbox (the ciphertext is bound to the execution, the signal's name and the
   * field's path: inbox rows have no sequence).
   */
  override async sendSignal(signal: SignalInput) {
    const envelope = signalEnvelope(signal);
    const marked = envelope === undefined ? undefined : this.#markedOf([envelope]);
    if (marked === undefined) return this.inner.sendSignal(signal);
    const { written } = await this.#sealFetching([envelope as EventEnvelope], marked);
    return this.inner.sendSignal({ ...signal, payload: (written[0] as EventEnvelope).payload });
  }

  /** The inbox with the sealed signal payloads opened (`Erased` once the subject is forgotten). */
  override async readSignals(
    executionId: string,
    options?: ReadSignalsOptions,
  ): Promise<StoredSignal[]> {
    const signals = await this.inner.readSignals(executionId, options);
    if (this.#rules.size === 0 || signals.length === 0) return signals;
    const events = signals.map(
      (signal) => signalEnvelope(signal) as EventEnvelope as unknown as StoredEvent,
    );
    const opened = await this.#open(events);
    if (opened === events) return signals;
    return signals.map((signal, index) => {
      const payload = (opened[index] as StoredEvent).payload;
      return payload === signal.payload ? signal : { ...signal, payload };
    });
  }

  override read(executionId: string, options?: ReadOptions): Promise<StoredEvent[]> {
    const read = this.inner.read(executionId, options);
    return this.#rules.size === 0 ? read : read.then((events) => this.#open(events));
  }

  override readAll(options?: ReadAllOptions): Promise<StoredEvent[]> {
    const read = this.inner.readAll(options);
    return this.#rules.size === 0 ? read : read.then((events) => this.#open(events));
  }

  override subscribe(options: SubscribeOptions, handler: SubscriptionHandler): Subscription {
    if (this.#rules.size === 0) return this.inner.subscribe(options, handler);
    return this.inner.subscribe(options, async (events) => handler(await this.#open(events)));
  }

  /**
   * Erase a subject: destroy its data keys in the keyring (every encrypted field of it, in every
   * event, reads as `Erased` from then on), then append an erasure receipt
   * (`crypto.subject_forgotten` at sequence 0 of `loom-erasure:<subject>`). Idempotent: a second
   * call destroys nothing more and returns the first receipt's time.
   *
   * Error codes: `INVALID_ARGUMENT`, the keyring's and the store's codes.
   *
   * @example
   * const receipt = await store.forget('user-42');
   */
  async forget(subject: string): Promise<ErasureReceipt> {
    checkSubject(subject);
    this.#keys.delete(subject);
    const result = await this.keyring.forget(subject);
    // A transactional step on SQLite seals from the cache: it must refuse the subject from now on.
    this.#remember(
      subject,
      cryptoError(
        CryptoErrorCode.SUBJECT_FORGOTTEN,
        `subject '${subject}' was forgotten: no new data is encrypted for it. Nothing was written`,
        { subject },
      ),
    );
    const receiptExecutionId = erasureReceiptId(subject);
    const payload = {
      subject,
      keysDestroyed: result.keysDestroyed,
      alreadyForgotten: result.alreadyForgotten,
    };
    try {
      const [stored] = await this.inner.append([
        { executionId: receiptExecutionId, sequence: 0, type: erasureReceiptType, payload },
      ]);
      return { ...result, receiptExecutionId, at: (stored as StoredEvent).at };
    } catch (error) {
      if (!isLoomError(error, ErrorCode.EXECUTION_ALREADY_STARTED)) throw error;
      const [first] = await this.inner.read(receiptExecutionId, { limit: 1 });
      return { ...result, receiptExecutionId, at: first?.at ?? Number.NaN };
    }
  }

  /** The marked envelopes of a batch with their rules, or undefined when none is marked. */
  #markedOf(envelopes: readonly EventEnvelope[] | undefined): Marked[] | undefined {
    if (this.#rules.size === 0 || !Array.isArray(envelopes)) return undefined;
    let marked: Marked[] | undefined;
    for (let index = 0; index < envelopes.length; index++) {
      const envelope = (envelopes as readonly EventEnvelope[])[index] as EventEnvelope;
      const rule = this.#rules.get((envelope as Partial<EventEnvelope> | null)?.type as string);
      if (rule === undefined) continue;
      marked ??= [];
      marked.push([recordedOf(envelope), rule, index]);
    }
    return marked;
  }

  /** Decrypts a batch of stored events: one walk per marked event, one keyring lookup. */
  async #open(events: StoredEvent[]): Promise<StoredEvent[]> {
    if (this.#rules.size === 0) return events;
    let out: StoredEvent[] | undefined;
    const slots: Slot[] = [];
    const places: FieldPlace[] = [];
    for (let index = 0; index < events.length; index++) {
      const event = events[index] as StoredEvent;
      const rule = this.#rules.get(event.type);
      if (rule === undefined) continue;
      const before = slots.length;
      const payload = mapMarked(event.payload, rule.roots, pendingVisitor, slots);
      if (payload === event.payload) continue;
      for (let slot = before; slot < slots.length; slot++) places.push(placeOf(event, ''));
      out ??= events.slice();
      out[index] = { ...event, payload };
    }
    if (out === undefined) return events;
    const refs = new Map<string, KeyRef>();
    for (let index = 0; index < slots.length; index++) {
      const { pending } = slots[index] as Slot;
      const ref = fieldKeyRef(pending.field);
      if (ref === undefined) throw integrityError(places[index] as FieldPlace, pending.path);
      refs.set(keyRefId(ref.subject, ref.version), ref);
    }
    const found = await this.keyring.lookup([...refs.values()]);
    for (let index = 0; index < slots.length; index++) {
      const { container, key, pending } = slots[index] as Slot;
      const place = { ...(places[index] as FieldPlace), path: pending.path };
      const ref = fieldKeyRef(pending.field) as KeyRef;
      const dataKey = found.keys.get(keyRefId(ref.subject, ref.version));
      let value: JsonValue | undefined;
      if (dataKey !== undefined) {
        value = openField(pending.field, dataKey, place);
        if (value === undefined) throw integrityError(place, pending.path);
      } else if (found.forgotten.has(ref.subject)) {
        value = erased(ref.subject, ref.version) as unknown as JsonValue;
      } else {
        throw cryptoError(
          CryptoErrorCode.KEY_NOT_FOUND,
          `event ${place.sequence} of execution ${place.executionId} has ${pending.path} encrypted under key '${ref.subject}' v${ref.version}, which this keyring does not have and never forgot: is the store read with the keyring (database, schema, master key) it was written with?`,
          {
            executionId: place.executionId,
            sequence: place.sequence,
            path: pending.path,
            subject: ref.subject,
            keyVersion: ref.version,
          },
        );
      }
      (container as Record<string | number, JsonValue>)[key] = value;
    }
    return out;
  }
}

/**
 * Wrap `store` so the fields `sensitive` marks are encrypted under their subject's key from
 * `keyring`. Inert for every event type the map does not name; with an empty map, every call
 * goes straight to `store`.
 *
 * Error codes: `INVALID_ARGUMENT` (a bad `sensitive` map or no keyring).
 *
 * @example
 * const store = encryptingEventStore(new InMemoryEventStore(), {
 *   keyring: new InMemoryKeyring(),
 *   sensitive: { 'user.registered': { subject: 'userId', fields: ['email', 'cards[].number'] } },
 * });
 */
export function encryptingEventStore(
  store: EventStore,
  options: EncryptingEventStoreOptions,
): EncryptingEventStore {
  const keyring = options?.keyring as Partial<Keyring> | undefined;
  if (typeof keyring?.current !== 'function' || typeof keyring.lookup !== 'function') {
    throw cryptoError(CryptoErrorCode.INVALID_ARGUMENT, 'keyring must be a Keyring', {
      option: 'keyring',
    });
  }
  return new EncryptingEventStore(store, options.keyring, options.sensitive);
}

/**
 * The envelope with its payload replaced. Copies the string-keyed fields only: the runtime
 * leaves the payload's encoded text on its envelopes under a symbol, which a store writes in
 * place of `payload`; a spread would carry the plaintext's text over to the ciphertext's
 * envelope. Unknown string fields stay, so the inner store still refuses them.
 */
function withPayload(envelope: EventEnvelope, payload: JsonValue): EventEnvelope {
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(envelope))
    copy[key] = (envelope as unknown as Record<string, unknown>)[key];
  copy.payload = payload;
  return copy as unknown as EventEnvelope;
}

/**
 * A signal as the envelope its `sensitive` entry applies to: type `signal:<name>`, sequence 0
 * (an inbox row has none when it is sealed); undefined for malformed input (the inner store
 * refuses it with its own error).
 */
function signalEnvelope(signal: SignalInput | StoredSignal): EventEnvelope | undefined {
  if (typeof signal !== 'object' || signal === null || typeof signal.name !== 'string')
    return undefined;
  return {
    executionId: signal.executionId,
    sequence: 0,
    type: signalRuleType(signal.name),
    payload: signal.payload,
  };
}

/**
 * The envelope with the payload the runtime recorded, when it built it: its payload object may
 * be an effect's live value that changed since, and the log must keep what the flow saw (the
 * text is what an undecorated store would write). Otherwise the envelope itself.
 */
function recordedOf(envelope: EventEnvelope): EventEnvelope {
  const text = recordedPayloadText(envelope);
  return text === undefined ? envelope : withPayload(envelope, decodePayload(text));
}

function placeOf(envelope: EventEnvelope, path: string): FieldPlace {
  return {
    executionId: envelope.executionId,
    sequence: envelope.sequence,
    type: envelope.type,
    path,
  };
}

/** The event's subject, or the error to raise if the event has a value to seal. */
function subjectOfEvent(envelope: EventEnvelope, rule: CompiledRule): string | LoomError {
  const subject = rule.subjectOf(envelope);
  if (
    typeof subject === 'string' &&
    subject.length > 0 &&
    subject.length <= CryptoLimits.subjectLengthMax
  )
    return subject;
  return cryptoError(
    CryptoErrorCode.CRYPTO_SUBJECT_MISSING,
    `event ${envelope.sequence} of execution ${envelope.executionId} ('${rule.type}') has sensitive fields but no subject: its subject must be a non-empty string of at most ${CryptoLimits.subjectLengthMax} code units, got ${typeof subject === 'string' ? `${subject.length} code units` : typeof subject}. Nothing was written`,
    { executionId: envelope.executionId, sequence: envelope.sequence, type: rule.type },
  );
}

function integrityError(place: FieldPlace, path: string) {
  return cryptoError(
    CryptoErrorCode.CRYPTO_INTEGRITY,
    `event ${place.sequence} of execution ${place.executionId}: the ciphertext at ${path} does not decrypt (its tag does not match, or it is malformed): it or its event was changed behind the store's back. Run verify(${JSON.stringify(place.executionId)}) to see where the log breaks`,
    { executionId: place.executionId, sequence: place.sequence, path },
  );
}

/** Keeps a `SUBJECT_FORGOTTEN` refusal as a value (raised later if needed); rethrows the rest. */
function forgottenOnly(error: unknown): LoomError {
  if (isLoomError(error, CryptoErrorCode.SUBJECT_FORGOTTEN)) return error;
  throw error;
}

function sealVisitor(key: DataKey | LoomError, place: FieldPlace, texts: string[]): MarkedVisitor {
  const seal = (value: JsonValue, path: string): JsonValue => {
    if (isErased(value)) return value;
    if (isLoomError(key)) throw key;
    const { field, text } = sealField(value, key, { ...place, path });
    texts.push(text);
    return field as unknown as JsonValue;
  };
  return {
    leaf: seal,
    branch: (value, path, expect) => {
      if (value === null) return value;
      const fits =
        expect === 'array'
          ? Array.isArray(value)
          : typeof value === 'object' && !Array.isArray(value) && !isEncryptedField(value);
      return fits ? undefined : seal(value, path);
    },
  };
}

/** Puts back the plaintext sealed in walk order (`texts`), as JSON gives it back. */
function plaintextVisitor(texts: readonly string[], next: () => number): MarkedVisitor {
  const plain = (): JsonValue => decodePayload(texts[next()] as string);
  return {
    leaf: (value) => (isEncryptedField(value) ? plain() : value),
    branch: (value) => (isEncryptedField(value) ? plain() : undefined),
  };
}

const pendingVisitor: MarkedVisitor = {
  leaf: (value, path) =>
    isEncryptedField(value) ? (new Pending(value, path) as unknown as JsonValue) : value,
  branch: (value, path) =>
    isEncryptedField(value) ? (new Pending(value, path) as unknown as JsonValue) : undefined,
};
