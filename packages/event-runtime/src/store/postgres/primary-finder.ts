import pg from 'pg';
import { hostLabel, type PgHost } from './pg-hosts.js';

/** What a probe of one host found. */
type ProbeOutcome = { host: PgHost; readWrite: true } | { host: PgHost; problem: string };

/**
 * `08001` (sqlclient_unable_to_establish_sqlconnection): the error a connection fails with when
 * no listed host is a read-write primary, or the one it reached is not. Classified as a lost
 * connection, so every caller reports `STORE_UNAVAILABLE` and tries again (ADR 0055).
 */
function unableToConnect(message: string): Error {
  return Object.assign(new Error(message), { code: '08001' });
}

/** pg keeps where it connects in these fields; a connection string would override the config's. */
interface Aimable {
  host: string;
  port: number;
  connectionParameters: { host: string; port: number };
  connection?: { stream?: { destroyed?: boolean } };
}

/** Points a not yet connected client at `target` (read by pg when it connects). */
function aim(client: pg.Client, target: PgHost): void {
  const aimable = client as unknown as Aimable;
  aimable.host = target.host;
  aimable.port = target.port;
  aimable.connectionParameters.host = target.host;
  aimable.connectionParameters.port = target.port;
}

/** Asks a connected session whether it can write (what libpq's read-write attribute checks). */
async function isReadOnly(client: pg.Client): Promise<boolean> {
  const result = await client.query<{ read_only: string }>(
    "SELECT current_setting('transaction_read_only') AS read_only",
  );
  return result.rows[0]?.read_only !== 'off';
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}

/**
 * Finds the read-write server of a host list and remembers it until a connection to it fails.
 * `pg` has no host list: this is the part of libpq's `target_session_attrs=read-write` it
 * lacks. Discovery probes every host at once (a dead host's connect timeout does not delay
 * the others) and keeps the first that answers writable; concurrent connects share one
 * discovery. ADR 0055.
 */
export class PrimaryFinder {
  private known: PgHost | undefined;
  private finding: Promise<PgHost> | undefined;
  /** How many discoveries ran (tests, metrics). */
  discoveries = 0;

  constructor(
    readonly hosts: readonly PgHost[],
    /** The pool's client config (user, database, timeouts); each probe is aimed at its host. */
    private readonly config: pg.ClientConfig,
  ) {}

  /** The primary last found, if it has not failed since. */
  get current(): PgHost | undefined {
    return this.known;
  }

  /** The primary: the remembered one, or a fresh discovery. */
  primary(): Promise<PgHost> {
    if (this.known !== undefined) return Promise.resolve(this.known);
    this.finding ??= this.discover().finally(() => {
      this.finding = undefined;
    });
    return this.finding;
  }

  /** `host` failed (refused, died, answered read-only): the next connection discovers again. */
  forget(host: PgHost): void {
    if (this.known === host) this.known = undefined;
  }

  private discover(): Promise<PgHost> {
    this.discoveries++;
    const outcomes: ProbeOutcome[] = [];
    return new Promise<PgHost>((resolve, reject) => {
      let settled = false;
      for (const host of this.hosts) {
        void this.probe(host).then((outcome) => {
          outcomes.push(outcome);
          if (settled) return;
          if ('readWrite' in outcome) {
            settled = true;
            this.known = host;
            resolve(host);
            return;
          }
          if (outcomes.length < this.hosts.length) return;
          settled = true;
          const order = (outcome: ProbeOutcome) => this.hosts.indexOf(outcome.host);
          const why = outcomes
            .sort((a, b) => order(a) - order(b))
            .map(
              (outcome) =>
                `${hostLabel(outcome.host)}: ${'problem' in outcome ? outcome.problem : ''}`,
            )
            .join('; ');
          reject(
            unableToConnect(
              `no host of ${this.hosts.map(hostLabel).join(', ')} is a read-write primary ` +
                `(${why}); during a failover this lasts until a standby is promoted`,
            ),
          );
        });
      }
    });
  }

  private async probe(host: PgHost): Promise<ProbeOutcome> {
    const client = new pg.Client(this.config);
    aim(client, host);
    client.on('error', () => {});
    try {
      await client.connect();
      const readOnly = await isReadOnly(client);
      return readOnly ? { host, problem: 'read-only (a standby)' } : { host, readWrite: true };
    } catch (error) {
      return { host, problem: describe(error) };
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

/**
 * The pg `Client` class a pool over a host list creates its connections with: each connection
 * goes to the finder's primary and checks, before anyone uses it, that the server it reached can
 * write; if it cannot (or cannot be reached) the host is forgotten and the connection fails
 * with a lost-connection error, so the caller's retry discovers the primary again. A connection
 * that dies later (`error`) makes the finder forget its host too.
 */
export function failoverClientClass(finder: PrimaryFinder): typeof pg.Client {
  class FailoverClient extends pg.Client {
    private target: PgHost | undefined;

    constructor(config?: string | pg.ClientConfig) {
      super(config);
      this.on('error', () => {
        if (this.target !== undefined) finder.forget(this.target);
      });
    }

    override connect(): Promise<pg.Client>;
    override connect(
      callback: ((err: Error) => void) | ((err: null, client: pg.Client) => void),
    ): void;
    override connect(
      callback?: ((err: Error) => void) | ((err: null, client: pg.Client) => void),
    ): Promise<pg.Client> | undefined {
      const connected = this.connectToPrimary().then(() => this as pg.Client);
      if (callback === undefined) return connected;
      const done = callback as (err: Error | null, client?: pg.Client) => void;
      connected.then(
        (client) => done(null, client),
        (error: Error) => done(error),
      );
      return undefined;
    }

    private async connectToPrimary(): Promise<void> {
      const target = await finder.primary();
      this.target = target;
      // The pool's connect timeout may have fired during discovery (it destroys the stream).
      if ((this as unknown as Aimable).connection?.stream?.destroyed === true) {
        throw unableToConnect(`timeout expired while finding the primary (${hostLabel(target)})`);
      }
      aim(this, target);
      try {
        await super.connect();
      } catch (error) {
        finder.forget(target);
        throw error;
      }
      let readOnly: boolean;
      try {
        readOnly = await isReadOnly(this);
      } catch (error) {
        finder.forget(target);
        await this.end().catch(() => undefined);
        throw error;
      }
      if (readOnly) {
        finder.forget(target);
        await this.end().catch(() => undefined);
        throw unableToConnect(
          `${hostLabel(target)} answered as a read-only server (a standby, or an old primary ` +
            'that rejoined): finding the primary again',
        );
      }
    }
  }
  return FailoverClient;
}
