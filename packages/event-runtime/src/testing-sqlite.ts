// `@loom/event-runtime/testing/sqlite`: the runtime conformance harness on a real SQLite file,
// for running `runtimeConformance` (from `/testing`) through a store decorator. Apart from
// `/testing` so that it alone needs better-sqlite3.
export type { DurableHarness, DurableHarnessOptions } from './testing/durable-harness.js';
export { sqliteRuntimeHarness } from './testing/sqlite-harness.js';
