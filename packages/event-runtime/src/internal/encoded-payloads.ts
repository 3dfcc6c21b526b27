import type { EventEnvelope } from '../envelope.js';

/**
 * Where the runtime leaves a payload's stored text on an envelope it built. The runtime encodes
 * a recorded value (a step result, an output, a signal, …) once, when it records it: to check
 * its size, and to hand the flow the value decoded from that text. The append must store that
 * same text: the payload may still hold the effect's live object, which can change before the
 * append runs, and the log must keep what the flow saw. It also saves encoding a second time.
 * A symbol, so it is no envelope field (the envelope key check never sees it) and only kernel
 * code, which never exports it, can set it. A property rather than a WeakMap: measured, a WeakMap
 * entry per event cost about 1 µs, more than the encode it saved.
 */
export const payloadTextKey: unique symbol = Symbol('loom.payloadText');

/**
 * The payload object `payloadTextKey`'s text was encoded from. The text is trusted only while the
 * envelope's `payload` is still that object: a store decorator that copies an envelope with a
 * payload of its own (`{ ...envelope, payload: encrypted }`) copies both symbols too, and without
 * this check the store would write the runtime's original text instead of the decorator's payload.
 */
export const payloadSourceKey: unique symbol = Symbol('loom.payloadSource');

/** An envelope that may carry its payload's stored text. */
export type EncodedEnvelope = EventEnvelope & {
  [payloadTextKey]?: string | undefined;
  [payloadSourceKey]?: unknown;
};

/**
 * The stored text the runtime left on `envelope`, if it encoded the payload already and the
 * envelope still carries the payload it encoded.
 */
export function encodedTextOf(envelope: EventEnvelope): string | undefined {
  const encoded = envelope as EncodedEnvelope;
  const text = encoded[payloadTextKey];
  return text !== undefined && encoded[payloadSourceKey] === envelope.payload ? text : undefined;
}
