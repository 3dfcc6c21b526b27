// Who may talk to the dashboard: the bind rule (loopback unless told), the Host and Origin checks
// (DNS rebinding, cross-site requests) and the mutation token.
import { createHash, timingSafeEqual } from 'node:crypto';
import { LoomError, ViewErrorCode } from '../../errors.js';

/** True for names and addresses that only this machine reaches. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return (
    bare === 'localhost' ||
    bare === '::1' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare) ||
    /^::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/i.test(bare)
  );
}

/** Throws `REMOTE_BIND_REFUSED` for a non-loopback host unless remote binds were allowed. */
export function checkBind(host: string, allowRemote: boolean): void {
  if (isLoopbackHost(host) || allowRemote) return;
  throw new LoomError(
    ViewErrorCode.REMOTE_BIND_REFUSED,
    `refusing to listen on '${host}', which other machines can reach: the dashboard shows every run's data and decides approvals. Keep the default 127.0.0.1 (reach it through an SSH tunnel), or pass --allow-remote (allowRemote: true) together with --host if you mean it`,
    { host },
  );
}

/**
 * The `Host` header values a request may carry: for a loopback bind, the loopback names with the
 * port (so a DNS name rebound to 127.0.0.1 is refused); for a remote bind, any (the names people
 * use for the machine are not known here), the token and the Origin check still apply.
 */
export function allowedHosts(host: string, port: number): ReadonlySet<string> | 'any' {
  if (!isLoopbackHost(host)) return 'any';
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  const named = bare.includes(':') ? `[${bare}]` : bare;
  return new Set([`${named}:${port}`, `127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
}

/** Refuses a request whose `Host` is not one of `allowed` (`ORIGIN_REFUSED`). */
export function checkHost(hostHeader: string | undefined, allowed: ReadonlySet<string> | 'any') {
  if (allowed === 'any') return;
  if (hostHeader !== undefined && allowed.has(hostHeader.toLowerCase())) return;
  throw new LoomError(
    ViewErrorCode.ORIGIN_REFUSED,
    `Host '${hostHeader ?? ''}' is not this dashboard's: open it as http://${[...allowed][0]}/`,
    { host: hostHeader ?? null },
  );
}

/**
 * Refuses a mutation sent by a page of another site: a browser's `Origin` must be this
 * dashboard's own (`http://<Host>`), and `Sec-Fetch-Site` must not say cross-site. Clients that
 * send neither (curl, scripts) pass on to the token check.
 */
export function checkOrigin(headers: {
  origin: string | undefined;
  host: string | undefined;
  fetchSite: string | undefined;
}): void {
  const sameOrigin =
    headers.origin === undefined || headers.origin === `http://${headers.host ?? ''}`;
  const sameSite = headers.fetchSite === undefined || headers.fetchSite === 'same-origin';
  if (sameOrigin && sameSite) return;
  throw new LoomError(
    ViewErrorCode.ORIGIN_REFUSED,
    `a mutation from origin '${headers.origin ?? ''}' (${headers.fetchSite ?? 'no fetch site'}) is refused: only the dashboard's own page (http://${headers.host ?? ''}) may send one`,
    { origin: headers.origin ?? null },
  );
}

/** Checks `Authorization: Bearer <token>` in constant time: `TOKEN_REQUIRED`, `TOKEN_INVALID`. */
export function checkToken(authorization: string | undefined, token: string): void {
  const given = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (given === undefined) {
    throw new LoomError(
      ViewErrorCode.TOKEN_REQUIRED,
      "a mutation needs the dashboard's token in 'Authorization: Bearer <token>' (printed by loom serve, or set with --token / LOOM_TOKEN)",
      {},
    );
  }
  const digest = (text: string) => createHash('sha256').update(text).digest();
  if (!timingSafeEqual(digest(given), digest(token))) {
    throw new LoomError(
      ViewErrorCode.TOKEN_INVALID,
      "the token is not this dashboard's: use the one loom serve printed at start",
      {},
    );
  }
}
