export { type Clock, systemClock } from './clock.js';
export type {
  AppendGuard,
  EventEnvelope,
  JsonValue,
  ReadAllOptions,
  ReadOptions,
  StoredEvent,
} from './envelope.js';
export { ErrorCode, isLoomError, LoomError, type LoomErrorFields } from './errors.js';
export type {
  EventStore,
  FenceStore,
  SubscribeOptions,
  Subscription,
  SubscriptionHandler,
  VerifyResult,
} from './event-store.js';
export { type LimitName, Limits } from './limits.js';
export {
  InMemoryEventStore,
  type InMemoryEventStoreOptions,
} from './store/memory/in-memory-event-store.js';
