// The P12 workload, shared by the round-trip test (src/p12-round-trips.test.ts) and the timing
// script (bench/p12.ts), so both measure the same thing: 50 events of one execution, each with
// one field of distinct content in the content store, read back through a content store that
// costs `roundTripMs` per call, in three shapes.
import { type EventStore, InMemoryEventStore, type JsonValue } from '@loom/event-runtime';
import {
  type ContentKey,
  contentResolvingEventStore,
  externalizingEventStore,
  InMemoryContentStore,
  isContentRef,
} from '../src/index.js';
import { SlowContentStore } from '../src/testing.js';

export const refsPerRead = 50;

export interface P12Workload {
  /** The log as stored (references in it). */
  log: EventStore;
  executionId: string;
  /** The content store with getMany, and the same content without it. */
  withGetMany: SlowContentStore;
  withoutGetMany: SlowContentStore;
}

/** Writes the 50 events (content goes in directly, not through the slow store). */
export async function p12Workload(roundTripMs: number): Promise<P12Workload> {
  const content = new InMemoryContentStore();
  const log = new InMemoryEventStore();
  const executionId = 'p12';
  const writer = externalizingEventStore(log, content, { thresholdBytes: 256 });
  await writer.append(
    Array.from({ length: refsPerRead }, (_, sequence) => ({
      executionId,
      sequence,
      type: 'step.completed',
      payload: { index: sequence, result: `observation ${sequence}: ${'x'.repeat(1000)}` },
    })),
  );
  return {
    log,
    executionId,
    withGetMany: new SlowContentStore(content, { roundTripMs }),
    withoutGetMany: new SlowContentStore(content, { roundTripMs, withGetMany: false }),
  };
}

/** Serialised: what a naive reader does, one awaited `get` per reference, in order. */
export async function readSerialised(work: P12Workload): Promise<JsonValue[]> {
  const events = await work.log.read(work.executionId);
  const payloads: JsonValue[] = [];
  for (const event of events) {
    const payload = { ...(event.payload as Record<string, JsonValue>) };
    for (const [name, value] of Object.entries(payload)) {
      if (!isContentRef(value)) continue;
      const bytes = await work.withGetMany.get(value.$content as ContentKey);
      payload[name] = JSON.parse(new TextDecoder().decode(bytes));
    }
    payloads.push(payload);
  }
  return payloads;
}

/** Coalesced: the resolving store over a content store without getMany (parallel gets). */
export async function readCoalesced(work: P12Workload): Promise<JsonValue[]> {
  const store = contentResolvingEventStore(work.log, work.withoutGetMany);
  return (await store.read(work.executionId)).map((event) => event.payload);
}

/** getMany: the resolving store, one round trip for the batch. */
export async function readGetMany(work: P12Workload): Promise<JsonValue[]> {
  const store = contentResolvingEventStore(work.log, work.withGetMany);
  return (await store.read(work.executionId)).map((event) => event.payload);
}
