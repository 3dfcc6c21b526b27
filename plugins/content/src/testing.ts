/**
 * `@loom/plugin-content/testing`: the conformance suite every `ContentStore` passes (run it on
 * your own), and a content store that counts round trips and adds latency (for tests and P12).
 * Imports vitest, which a production build must not load.
 */
export {
  type ContentStoreHarness,
  contentStoreConformance,
} from './testing/content-store-conformance.js';
export { type RoundTripCounts, SlowContentStore } from './testing/slow-content-store.js';
