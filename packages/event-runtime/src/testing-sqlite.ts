// `@loom/event-runtime/testing/sqlite`: the event-store and runtime conformance harnesses on a
// real SQLite file, for running `eventStoreConformance` / `runtimeConformance` (from `/testing`)
// through a store decorator. Apart from `/testing` so that it alone needs better-sqlite3.
export type { DurableHarness, DurableHarnessOptions } from './testing/durable-harness.js';
export { sqliteEventStoreHarness, sqliteRuntimeHarness } from './testing/sqlite-harness.js';
