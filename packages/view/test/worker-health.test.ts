// `loom worker --health-port`: an orchestrator's probes against the built binary. /healthz says
// the process answers, /readyz says the store answers and the node holds its claim (200); the
// server's 503s (not ready, draining) are tested on the server itself below. On Postgres the worker is given a host list whose
// first host is down (the form a failover manager prints): it finds the server and is ready.
import { createServer } from 'node:net';
import { killTestProcesses } from '@loom/event-runtime/testing';
import type { RuntimeHealth } from '@loom/workflow-runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { startHealthServer } from '../src/internal/health-server.js';
import { dbTargets, pgUrl } from './db-targets.js';
import { spawnLoomWorker, workerFlows } from './worker/loom-worker.js';

const { targets, cleanup } = dbTargets('worker-health');
afterAll(async () => {
  await killTestProcesses();
  await cleanup();
});

async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function get(port: number, path: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, body: await response.json() };
}

describe('loom worker --health-port', () => {
  for (const target of targets) {
    it(`${target.name}: /healthz 200, /readyz 200 with the store reached and the claim held`, async () => {
      await (await target.open()).close();
      let db = target.db;
      if (target.name === 'postgres') {
        const url = new URL(pgUrl);
        db = `postgres://root@127.0.0.1:${await deadPort()},${url.host}${url.pathname}?${db.split('?')[1]}`;
      }
      const worker = spawnLoomWorker(
        [
          '--db',
          db,
          '--flows',
          workerFlows,
          '--health-port',
          '0',
          '--health-host',
          '127.0.0.1',
          '--drain-timeout',
          '2000',
        ],
        {},
      );
      const line = await worker.line('loom: worker ');
      const port = Number(/health port (\d+)/.exec(line)?.[1]);
      expect(port).toBeGreaterThan(0);
      expect(await get(port, '/healthz')).toEqual({ status: 200, body: { live: true } });
      const ready = await get(port, '/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body).toMatchObject({
        ready: true,
        draining: false,
        store: { reachable: true },
      });
      expect((await get(port, '/metrics')).status).toBe(404);

      worker.child.kill('SIGTERM');
      expect((await worker.exit).code).toBe(0);
    });
  }
});

describe('the health server', () => {
  it('/readyz is 503 naming the store error code when not ready, and while draining', async () => {
    let health: RuntimeHealth = {
      ready: false,
      store: { reachable: false, error: { code: 'STORE_UNAVAILABLE', message: 'host db1 down' } },
      nodeClaim: 'lost',
      shuttingDown: false,
    };
    let draining = false;
    const server = await startHealthServer(
      {
        health: async () => health,
        get draining() {
          return draining;
        },
      },
      0,
      '127.0.0.1',
    );
    try {
      expect(await get(server.port, '/readyz')).toEqual({
        status: 503,
        body: {
          ready: false,
          draining: false,
          nodeClaim: 'lost',
          store: { reachable: false, code: 'STORE_UNAVAILABLE' },
        },
      });
      health = { ready: true, store: { reachable: true }, nodeClaim: 'held', shuttingDown: false };
      expect((await get(server.port, '/readyz')).status).toBe(200);
      draining = true;
      expect(await get(server.port, '/readyz')).toMatchObject({
        status: 503,
        body: { ready: false, draining: true },
      });
      expect((await get(server.port, '/healthz')).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
