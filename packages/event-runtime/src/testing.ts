export {
  type ConformanceHarness,
  eventStoreConformance,
  freshId,
} from './testing/event-store-conformance.js';
