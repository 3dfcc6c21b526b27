import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RuntimeHealth } from '@loom/workflow-runtime';

/** How long `/readyz` lets the store take to answer before it says not ready. */
export const readyProbeTimeoutMs = 2_000;

/** What the probe endpoints ask: the runtime's health, and whether the worker is draining. */
export interface HealthSource {
  health(options: { timeoutMs: number }): Promise<RuntimeHealth>;
  readonly draining: boolean;
}

/** A started health server and the port it listens on. */
export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * `loom worker --health-port`: `GET /healthz` answers 200 while the process serves requests
 * (liveness); `GET /readyz` answers 200 when `runtime.health()` says ready and the worker is not
 * draining, else 503 (readiness), both with a JSON body: `ready`, `draining`, `nodeClaim`,
 * `store` (`reachable`, and the error's `code` when it is not). No message text: the endpoint may
 * be reachable from outside the host. Anything else is 404.
 */
export async function startHealthServer(
  source: HealthSource,
  port: number,
  host: string,
): Promise<HealthServer> {
  const server: Server = createServer((request, response) => {
    const send = (status: number, body: unknown) => {
      response.writeHead(status, {
        'content-type': 'application/json',
        'cache-control': 'no-store',
      });
      response.end(`${JSON.stringify(body)}\n`);
    };
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      send(405, { error: 'GET only' });
      return;
    }
    if (path === '/healthz') {
      send(200, { live: true });
      return;
    }
    if (path !== '/readyz') {
      send(404, { error: 'GET /healthz or /readyz' });
      return;
    }
    source.health({ timeoutMs: readyProbeTimeoutMs }).then(
      (health) => {
        const ready = health.ready && !source.draining;
        send(ready ? 200 : 503, {
          ready,
          draining: source.draining,
          nodeClaim: health.nodeClaim,
          store: {
            reachable: health.store.reachable,
            ...(health.store.error === undefined ? {} : { code: health.store.error.code }),
          },
        });
      },
      () => send(503, { ready: false, draining: source.draining }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
