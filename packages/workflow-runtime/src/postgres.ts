/**
 * `@loom/workflow-runtime/postgres`: open a Postgres backend for `createRuntime` without
 * importing `@loom/event-runtime` yourself. A separate entry so that only its users load `pg`
 * (an optional peer dependency).
 */
export {
  type OpenPostgresOptions,
  openPostgres,
  type PostgresBackend,
} from '@loom/event-runtime/postgres';
