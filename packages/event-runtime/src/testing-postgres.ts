// `@loom/event-runtime/testing/postgres`: the runtime conformance harness on a real Postgres
// schema, for running `runtimeConformance` (from `/testing`) through a store decorator. Apart
// from `/testing` so that it alone needs pg.
export type { DurableHarness, DurableHarnessOptions } from './testing/durable-harness.js';
export { postgresRuntimeHarness } from './testing/postgres-harness.js';
export { serverDropsConnections } from './testing/server-dropped-connections.js';
