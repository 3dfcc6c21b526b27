/**
 * Payload text the kernel already encoded, keyed by the payload object it encoded. The runtime
 * encodes a step result (or an output, a signal, …) once when it records it, to check its size
 * and to hand the flow the value decoded from that text; `prepareAppend` then stores exactly
 * that text instead of encoding the payload a second time. Only kernel code registers a
 * payload, and only one it built itself and never changes afterwards.
 */
const texts = new WeakMap<object, string>();

/** Registers `text` as the stored form of `payload`, and returns `payload`. */
export function withEncodedText<P extends object>(payload: P, text: string): P {
  texts.set(payload, text);
  return payload;
}

/** The text registered for `payload`, if the kernel encoded it already. */
export function encodedTextOf(payload: unknown): string | undefined {
  return typeof payload === 'object' && payload !== null ? texts.get(payload) : undefined;
}
