export {
  type CachingContentStore,
  type CachingContentStoreOptions,
  cachingContentStore,
} from './caching-content-store.js';
export {
  type ContentKey,
  ContentLimits,
  type ContentRef,
  contentKeyOf,
  isContentKey,
  isContentRef,
  isMissingContent,
  type MissingContent,
} from './content-ref.js';
export { contentResolvingEventStore } from './content-resolving-event-store.js';
export type { ContentStore } from './content-store.js';
export { ContentErrorCode, isLoomError, LoomError } from './errors.js';
export {
  type ExternalizingOptions,
  externalizingEventStore,
} from './externalizing-event-store.js';
export { FileContentStore, type FileContentStoreOptions } from './file-content-store.js';
export {
  InMemoryContentStore,
  type InMemoryContentStoreOptions,
} from './in-memory-content-store.js';
