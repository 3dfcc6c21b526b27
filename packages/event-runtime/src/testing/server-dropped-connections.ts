import pg from 'pg';
import { until } from './until.js';

/**
 * What a server restart or a failover does to a pool's idle connections, on demand: every backend
 * whose `application_name` is `applicationName` is terminated by the server (SQLSTATE 57P01 on
 * the client), and this resolves once none is left. Give the pool under test a URL with
 * `?application_name=<a name of the test's own>` so that nothing else is touched; then a pool
 * without an 'error' listener crashes the process (an uncaught 'error' event), which is what a
 * test of "a dependency's failure never crashes the user's process" wants to catch.
 */
export async function serverDropsConnections(
  adminUrl: string,
  applicationName: string,
): Promise<number> {
  const admin = new pg.Client({ connectionString: adminUrl });
  admin.on('error', () => undefined);
  await admin.connect();
  try {
    const terminate = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`;
    const { rowCount } = await admin.query(terminate, [applicationName]);
    await until(
      async () =>
        (
          await admin.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [
            applicationName,
          ])
        ).rowCount === 0,
      `the server to end every connection of '${applicationName}'`,
      10_000,
    );
    return rowCount ?? 0;
  } finally {
    await admin.end();
  }
}
