import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import {
  dashboardPollMsDefault,
  dashboardPortDefault,
  dashboardTokenCharsMin,
} from './dashboard-defaults.js';
import { LoomError, ViewErrorCode } from './errors.js';
import { dashboardApp } from './internal/dashboard/dashboard-app.js';
import { allowedHosts, checkBind } from './internal/dashboard/guard.js';
import { type Operator, openOperator } from './open-operator.js';
import { openView, type View } from './open-view.js';

export {
  dashboardPollMsDefault,
  dashboardPortDefault,
  dashboardTokenCharsMin,
  tokenEnvVar,
} from './dashboard-defaults.js';

/** Options of {@link startDashboard}. */
export interface DashboardOptions {
  /** The database (`sqlite:<path>`, `postgres://…[?schema=name]`): opened, and closed with it. */
  db?: string;
  /** Or a view you opened (not closed by the dashboard). */
  view?: View;
  /** With `view`: an operator you opened (not closed by the dashboard); omit for read-only. */
  operator?: Operator;
  /** Default {@link dashboardPortDefault}; 0 picks a free port (see `Dashboard.port`). */
  port?: number;
  /** Default `127.0.0.1`. A host that is not loopback needs `allowRemote`. */
  host?: string;
  /** Allows a non-loopback `host` (other machines can reach the dashboard). Default false. */
  allowRemote?: boolean;
  /** The mutation token (at least {@link dashboardTokenCharsMin} characters); default random. */
  token?: string;
  /** No mutations: no operator is opened, the page shows no buttons, the endpoints answer 403. */
  readOnly?: boolean;
  /** Event-stream poll period, ms (default {@link dashboardPollMsDefault}, 50 to 60,000). */
  pollMs?: number;
}

/** A running dashboard. */
export interface Dashboard {
  /** `http://<host>:<port>/`. */
  readonly url: string;
  /** The page with the token in its fragment (`#token=…`): open this one to act. */
  readonly urlWithToken: string;
  readonly host: string;
  readonly port: number;
  readonly token: string;
  readonly readOnly: boolean;
  /** Ends open event streams, stops listening, and closes what it opened. */
  close(): Promise<void>;
}

function invalid(path: string, message: string): LoomError {
  return new LoomError(ViewErrorCode.INVALID_ARGUMENT, message, { path });
}

/**
 * Starts the dashboard: a local web app with the runs table (status filter, live updates over
 * server-sent events), each run's timeline chart, event inspector, and approve / reject / cancel /
 * signal buttons. It listens on 127.0.0.1 unless told otherwise; a mutation needs the token
 * (`Authorization: Bearer <token>`), comes from the page's own origin, and is refused on a
 * read-only dashboard.
 *
 * Error codes: `REMOTE_BIND_REFUSED` (a non-loopback host without `allowRemote`),
 * `INVALID_ARGUMENT` (no `db` or `view`, both, a short token, a bad port or poll period), the
 * errors of {@link openView} and {@link openOperator}, and the listen error (`EADDRINUSE`).
 *
 * @example
 * const dashboard = await startDashboard({ db: 'sqlite:./loom.db', port: 0 });
 * console.log(`open ${dashboard.urlWithToken}`);
 * await dashboard.close();
 */
export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const host = options.host ?? '127.0.0.1';
  checkBind(host, options.allowRemote === true);
  const port = options.port ?? dashboardPortDefault;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw invalid('port', `port must be an integer from 0 to 65535, got ${port}`);
  }
  const pollMs = options.pollMs ?? dashboardPollMsDefault;
  if (!Number.isInteger(pollMs) || pollMs < 50 || pollMs > 60_000) {
    throw invalid('pollMs', `pollMs must be an integer from 50 to 60000, got ${pollMs}`);
  }
  const token = options.token ?? randomBytes(24).toString('base64url');
  if (token.length < dashboardTokenCharsMin || /\s/.test(token)) {
    throw invalid(
      'token',
      `the token must be at least ${dashboardTokenCharsMin} characters without spaces: leave it out for a random one`,
    );
  }
  if ((options.db === undefined) === (options.view === undefined)) {
    throw invalid('db', 'give the dashboard either db (a database URL) or view (an open View)');
  }
  const readOnly = options.readOnly === true;
  const owned: { close(): Promise<void> }[] = [];
  let view: View;
  let operator: Operator | undefined;
  if (options.db !== undefined) {
    view = await openView({ db: options.db });
    owned.push(view);
    if (!readOnly) {
      try {
        operator = await openOperator({ db: options.db });
      } catch (error) {
        await view.close();
        throw error;
      }
      owned.push(operator);
    }
  } else {
    view = options.view as View;
    operator = readOnly ? undefined : options.operator;
  }

  let closing = false;
  const loops = new Set<Promise<void>>();
  let listening = { port, hosts: allowedHosts(host, port) };
  const app = dashboardApp({
    view,
    operator,
    token,
    readOnly: readOnly || operator === undefined,
    get allowedHosts() {
      return listening.hosts;
    },
    pollMs,
    closing: () => closing,
    track: (loop) => {
      loops.add(loop);
      void loop.then(() => loops.delete(loop));
    },
  });
  const server = createAdaptorServer({ fetch: app.fetch });
  const closeOwned = async () => {
    for (const item of owned.reverse()) await item.close();
  };
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await closeOwned();
    throw error;
  }
  const bound = (server.address() as AddressInfo).port;
  listening = { port: bound, hosts: allowedHosts(host, bound) };
  const shown = host.includes(':') ? `[${host}]` : host;
  const url = `http://${shown}:${bound}/`;
  return {
    url,
    urlWithToken: `${url}#token=${encodeURIComponent(token)}`,
    host,
    port: bound,
    token,
    readOnly: readOnly || operator === undefined,
    close: async () => {
      if (closing) return;
      closing = true;
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      if ('closeAllConnections' in server) server.closeAllConnections();
      await Promise.all(loops);
      await stopped;
      await closeOwned();
    },
  };
}
