// What a failover campaign needs to know of a multi-host URL (ADR 0055, 0056): one URL per host,
// the host that takes writes now, and whether a commit made after an instant is on a server yet.
// Shared by the kernel's campaign (failover-campaign.ts, its CLI) and the agents' campaign of
// packages/agent-loop/test/failover/ (a relative import: no test helper here is public API).
import pg from 'pg';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `postgres://u@h1:p1,h2:p2/db?…` → one URL per host (query kept, target_session_attrs dropped). */
export function hostUrls(url: string): string[] {
  const match = /^(postgres(?:ql)?:\/\/)(?:([^@/]*)@)?([^/?]+)(\/[^?]*)?(\?.*)?$/.exec(url);
  if (match === null) throw new Error(`not a postgres:// URL: ${url}`);
  const [, scheme, auth, hosts, path, query] = match;
  const params = new URLSearchParams((query ?? '').slice(1));
  params.delete('target_session_attrs');
  const rest = `${path ?? ''}${params.size > 0 ? `?${params}` : ''}`;
  return (hosts as string)
    .split(',')
    .map((host) => `${scheme}${auth === undefined ? '' : `${auth}@`}${host}${rest}`);
}

/** The single-host URL of the host that takes writes now, or undefined when none does. */
export async function writableUrl(url: string): Promise<string | undefined> {
  for (const candidate of hostUrls(url)) {
    const client = new pg.Client({ connectionString: candidate, connectionTimeoutMillis: 1_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query('SELECT pg_is_in_recovery() AS standby');
      if (rows[0]?.standby === false) return candidate;
    } catch {
      // Down, or not there yet.
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  return undefined;
}

/** The single-host URL of the host that takes writes, waited for up to `deadlineMs`. */
export async function waitForWritable(url: string, deadlineMs: number): Promise<string> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const found = await writableUrl(url);
    if (found !== undefined) return found;
    if (Date.now() > until)
      throw new Error(`no host of ${hostUrls(url).join(' ')} took writes within ${deadlineMs} ms`);
    await pause(100);
  }
}

/** Per host: whether an event stamped at or after `atMs` is there (a standby answers reads too). */
export async function commitAfter(url: string, schema: string, atMs: number): Promise<boolean> {
  for (const candidate of hostUrls(url)) {
    const client = new pg.Client({ connectionString: candidate, connectionTimeoutMillis: 500 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query(
        `SELECT EXISTS (SELECT 1 FROM "${schema}".events WHERE at >= $1) AS found`,
        [atMs],
      );
      if (rows[0]?.found === true) return true;
    } catch {
      // Down, or in the middle of its promotion.
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  return false;
}
