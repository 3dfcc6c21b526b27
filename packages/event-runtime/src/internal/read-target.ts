import { CoalescingEventStore } from '../coalescing-event-store.js';
import type { EventStore } from '../event-store.js';

/**
 * The store whose table a `read` through `events` reads: a `CoalescingEventStore` coalesces
 * appends only and forwards reads to its inner store unchanged, so a snapshot store may read
 * that inner store's table in its combined `loadWithTail`. Any other wrapper is left as is (its
 * counting or fault injection must see the read).
 */
export function readTarget(events: EventStore): EventStore {
  let target = events;
  while (target instanceof CoalescingEventStore) target = target.inner;
  return target;
}
