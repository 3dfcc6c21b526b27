import type { Notification, PoolClient } from 'pg';
import type { Clock } from '../../clock.js';

/** What the listener needs from its store. */
export interface BucketListenerOptions {
  /** Checks out the one connection the listener keeps (from the store's pool). */
  connect: () => Promise<PoolClient>;
  onNotification: (channel: string, payload: string) => void;
  /** The connection came back after a loss: notifications may have been missed meanwhile. */
  onReconnect: () => void;
  /** Arms the reconnect backoff. */
  clock: Clock;
}

/** First retry after a lost or refused connection; doubles per failure up to the max. */
const reconnectDelayMs = 50;
const reconnectDelayMaxMs = 5_000;

/**
 * One LISTEN connection per store, however many subscriptions: each subscription retains the
 * channels it cares about, a channel is LISTENed while anyone retains it and UNLISTENed when the
 * last one lets go. The connection is made lazily on the first retain; when it is lost the
 * listener reconnects with backoff, re-LISTENs and reports `onReconnect` so the store can re-read.
 */
export class BucketListener {
  private readonly retained = new Map<string, number>();
  /** What the current connection listens to (its LISTENs done, or the one in flight). */
  private readonly listening = new Set<string>();
  private client: PoolClient | undefined;
  /**
   * Settles once every query issued on the current connection has: the next one waits for it.
   * One query at a time per connection: pg 8 queues a client's concurrent queries, but warns
   * (a DeprecationWarning in the user's process) and pg 9 drops the queue.
   */
  private tail: Promise<unknown> = Promise.resolve();
  private connecting = false;
  private everConnected = false;
  private failures = 0;
  private cancelRetry: (() => void) | undefined;
  private waiting: (() => void)[] = [];
  private closed = false;

  constructor(private readonly options: BucketListenerOptions) {}

  /**
   * Listens to `channels` until the returned release is called. `onListening` runs once the
   * LISTEN is in effect (reads after it cannot miss a notification), unless it already was.
   */
  retain(channels: readonly string[], onListening: () => void): () => void {
    for (const channel of channels)
      this.retained.set(channel, (this.retained.get(channel) ?? 0) + 1);
    if (this.client === undefined) {
      this.waiting.push(onListening);
      this.connect();
    } else {
      void this.sync().then((listening) => {
        if (listening) onListening();
      });
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const channel of channels) {
        const count = (this.retained.get(channel) ?? 1) - 1;
        if (count === 0) this.retained.delete(channel);
        else this.retained.set(channel, count);
      }
      void this.sync();
    };
  }

  /** Test hook: the channels the server says this connection listens to. */
  async channelsOnServer(): Promise<string[]> {
    const client = this.client;
    if (client === undefined) return [];
    const result = await this.serial(() =>
      client.query<{ channel: string }>('SELECT pg_listening_channels() AS channel'),
    );
    return result.rows.map((row) => row.channel).sort();
  }

  /** Test hook: the server process id of the listener connection, if connected. */
  get processId(): number | undefined {
    return (this.client as { processID?: number } | undefined)?.processID;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cancelRetry?.();
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) client.release(true);
  }

  /**
   * Brings the server's LISTEN set in line with `retained`, in one query, once the connection's
   * earlier queries are done: true once it is (false if the connection was lost or replaced).
   */
  private sync(): Promise<boolean> {
    const client = this.client;
    if (client === undefined) return Promise.resolve(false);
    return this.serial(async () => {
      if (this.client !== client) return false;
      const statements: string[] = [];
      for (const channel of this.retained.keys()) {
        if (this.listening.has(channel)) continue;
        this.listening.add(channel);
        statements.push(`LISTEN "${channel}"`);
      }
      for (const channel of this.listening) {
        if (this.retained.has(channel)) continue;
        this.listening.delete(channel);
        statements.push(`UNLISTEN "${channel}"`);
      }
      // Nothing to change: the queries before this one, which did it, are done.
      if (statements.length === 0) return true;
      try {
        await client.query(statements.join('; '));
        return true;
      } catch (error) {
        this.lost(client, error);
        return false;
      }
    });
  }

  /** Runs `work` once every query issued before it on this connection has settled. */
  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.tail.then(work, work);
    this.tail = next.catch(() => undefined);
    return next;
  }

  private connect(): void {
    if (this.closed || this.connecting || this.client !== undefined) return;
    if (this.cancelRetry !== undefined) return;
    this.connecting = true;
    void this.open();
  }

  private async open(): Promise<void> {
    let client: PoolClient;
    try {
      client = await this.options.connect();
    } catch {
      this.connecting = false;
      this.retryLater();
      return;
    }
    this.connecting = false;
    if (this.closed) {
      client.release(true);
      return;
    }
    client.on('notification', (message: Notification) => {
      this.options.onNotification(message.channel, message.payload ?? '');
    });
    client.on('error', (error: unknown) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('listener connection ended')));
    this.client = client;
    this.listening.clear();
    // A new connection: nothing is in flight on it (what was, was on the lost one).
    this.tail = Promise.resolve();
    const listening = await this.sync();
    if (!listening || this.client !== client) return;
    this.failures = 0;
    const waiting = this.waiting;
    this.waiting = [];
    if (this.everConnected) this.options.onReconnect();
    else for (const onListening of waiting) onListening();
    this.everConnected = true;
  }

  private lost(client: PoolClient, error: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.listening.clear();
    client.removeAllListeners('notification');
    // Keep an 'error' listener: a dead socket may still emit, and unhandled that would crash.
    client.on('error', () => {});
    client.release(error instanceof Error ? error : true);
    this.retryLater();
  }

  private retryLater(): void {
    // Nobody listening: reconnect lazily on the next retain instead.
    if (this.closed || this.retained.size === 0) return;
    const delayMs = Math.min(reconnectDelayMaxMs, reconnectDelayMs * 2 ** this.failures);
    this.failures++;
    this.cancelRetry = this.options.clock.setTimer(() => {
      this.cancelRetry = undefined;
      this.connect();
    }, delayMs);
  }
}
