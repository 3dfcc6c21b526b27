import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import type { EffectDefinition } from './define-effect.js';
import { PlacementLimits } from './placement.js';

/** Options of {@link serveEffects}. */
export interface ServeEffectsOptions {
  /** The effects this worker runs, by name. */
  effects: ReadonlyArray<EffectDefinition<never, unknown>>;
  /** Interface to listen on. Default `127.0.0.1` (set `0.0.0.0` deliberately, behind a network you trust). */
  host?: string;
  /** Port; 0 (the default) picks a free one (read it from `url`). */
  port?: number;
  /**
   * Completed results kept to answer a repeated idempotency key without running the effect again
   * (oldest dropped first; in memory, so a restart forgets them). Default 10,000; 0 = no dedupe.
   */
  dedupeEntriesMax?: number;
  /** Handler failures are reported here too (they also go back to the caller). */
  onError?: (error: unknown) => void;
}

/** A running effect server. */
export interface EffectServer {
  /** `http://host:port`, what a caller puts in `RemoteWorker.url`. */
  readonly url: string;
  /** Stop listening and close connections; resolves once closed. */
  close(): Promise<void>;
}

type Outcome = { ok: true; result: unknown } | { ok: false; error: unknown };

/**
 * Serve effects to other processes' `PlacementDispatcher` over HTTP (node:http, no framework):
 * `POST /loom/effects/<name>` with `{ "input": … }` and the headers `loom-idempotency-key` and
 * `loom-attempt`. Answers 200 `{ "result": … }`, 404 for an unknown effect, 400 for a malformed
 * request, 413 for a body over `PlacementLimits.responseBytesMax`, and 500 `{ "error": { name,
 * message, code } }` when the handler threw. A call whose key is running or recently completed
 * here is answered from that run instead of running the effect again; failures are not kept, so
 * a retry runs it again.
 *
 * Error codes: `INVALID_ARGUMENT` (bad options, two effects with one name); the listen error
 * (e.g. `EADDRINUSE`) rejects.
 *
 * @example
 * const server = await serveEffects({ effects: [embed], port: 7400 });
 * console.log(`effects at ${server.url}`);
 */
export async function serveEffects(options: ServeEffectsOptions): Promise<EffectServer> {
  const handlers = new Map<string, EffectDefinition<never, unknown>>();
  for (const effect of options.effects) {
    if (handlers.has(effect.name)) {
      throw new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        `serveEffects got two effects named '${effect.name}'`,
        { path: 'effects', actual: effect.name },
      );
    }
    handlers.set(effect.name, effect);
  }
  const dedupeMax = options.dedupeEntriesMax ?? PlacementLimits.dedupeEntriesMaxDefault;
  if (!Number.isSafeInteger(dedupeMax) || dedupeMax < 0) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      'dedupeEntriesMax must be a non-negative integer',
      { path: 'dedupeEntriesMax', actual: dedupeMax },
    );
  }
  const runs = new Map<string, Promise<Outcome>>();
  const report = options.onError ?? (() => undefined);

  const run = (
    effect: EffectDefinition<never, unknown>,
    key: string,
    attempt: number,
    input: unknown,
    signal: AbortSignal,
  ) => {
    const id = `${effect.name}\n${key}`;
    const known = runs.get(id);
    if (known !== undefined) return known;
    const outcome: Promise<Outcome> = (async () => {
      try {
        const result = await effect.handler(input as never, {
          idempotencyKey: key,
          attempt,
          signal,
        });
        return { ok: true as const, result: result ?? null };
      } catch (error) {
        report(error);
        return { ok: false as const, error };
      }
    })();
    if (dedupeMax > 0) {
      runs.set(id, outcome);
      void outcome.then((settled) => {
        if (!settled.ok) runs.delete(id);
        else while (runs.size > dedupeMax) runs.delete(runs.keys().next().value as string);
      });
    }
    return outcome;
  };

  const server = createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      report(error);
      if (!response.headersSent) send(response, 500, { error: describe(error) });
      else response.destroy();
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://effects');
    const prefix = '/loom/effects/';
    if (request.method !== 'POST' || !url.pathname.startsWith(prefix)) {
      request.resume();
      return send(response, 404, {
        error: { name: 'NotFound', message: 'POST /loom/effects/<name>' },
      });
    }
    let name: string;
    try {
      name = decodeURIComponent(url.pathname.slice(prefix.length));
    } catch {
      request.resume();
      return send(response, 400, {
        error: {
          name: 'BadRequest',
          message: 'the effect name in the path is not valid percent-encoding',
        },
      });
    }
    const effect = handlers.get(name);
    const body = await readBody(request);
    if (body === undefined) {
      return send(response, 413, {
        error: { name: 'TooLarge', message: 'request body over responseBytesMax' },
      });
    }
    if (effect === undefined) {
      return send(response, 404, {
        error: { name: 'UnknownEffect', message: `no effect '${name}' here` },
      });
    }
    const key = request.headers['loom-idempotency-key'];
    const attempt = Number(request.headers['loom-attempt'] ?? '1');
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined;
    }
    if (
      typeof key !== 'string' ||
      key === '' ||
      !Number.isSafeInteger(attempt) ||
      attempt < 1 ||
      typeof parsed !== 'object' ||
      parsed === null ||
      !('input' in parsed)
    ) {
      return send(response, 400, {
        error: {
          name: 'BadRequest',
          message: 'need JSON { "input": … }, loom-idempotency-key and loom-attempt',
        },
      });
    }
    // The caller hung up (its timeout, its process died): tell the handler through its signal.
    const gone = new AbortController();
    response.on('close', () => {
      if (!response.writableFinished) gone.abort();
    });
    const outcome = await run(
      effect,
      key,
      attempt,
      (parsed as { input: unknown }).input,
      gone.signal,
    );
    if (outcome.ok) return send(response, 200, { result: outcome.result });
    return send(response, 500, { error: describe(outcome.error) });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function describe(error: unknown): { name: string; message: string; code?: string } {
  if (typeof error === 'object' && error !== null) {
    const { name, message, code } = error as { name?: unknown; message?: unknown; code?: unknown };
    return {
      name: typeof name === 'string' ? name : 'Error',
      message: typeof message === 'string' ? message : String(error),
      ...(typeof code === 'string' ? { code } : {}),
    };
  }
  return { name: 'Error', message: String(error) };
}

function send(response: ServerResponse, status: number, body: unknown): void {
  let text: string;
  try {
    text = JSON.stringify(body);
  } catch (error) {
    status = 500;
    text = JSON.stringify({
      error: { name: 'NotJson', message: `the result is not JSON: ${describe(error).message}` },
    });
  }
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(text);
}

/** The request body as text, or undefined past `responseBytesMax` bytes. */
async function readBody(request: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of request) {
    bytes += (chunk as Buffer).length;
    if (bytes > PlacementLimits.responseBytesMax) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
