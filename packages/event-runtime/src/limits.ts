/**
 * Every store enforces these limits before it writes anything. Each one is a named constant
 * and breaking it throws `LIMIT_EXCEEDED` naming the limit, so a caller can tell which.
 */
export const Limits = {
  /** Bytes of one event's payload in its stored JSON form (UTF-8). 1 MiB: large blobs belong in a content store. */
  payloadBytesMax: 1024 * 1024,
  /** Envelopes in one `append` call. Keeps one statement and one transaction bounded. */
  eventsPerAppendMax: 1000,
  /** Characters of an execution id. Ids are keys in every index; 200 keeps them cheap. */
  executionIdLengthMax: 200,
  /** Characters of an event type name. */
  eventTypeLengthMax: 200,
  /** Nesting depth of a payload. Deeper structures are almost always a bug (or a cycle). */
  payloadDepthMax: 512,
  /** Rows one `read` / `readAll` call returns when no `limit` is given, and the most it may ask. */
  readLimitMax: 10_000,
} as const;

export type LimitName = keyof typeof Limits;
