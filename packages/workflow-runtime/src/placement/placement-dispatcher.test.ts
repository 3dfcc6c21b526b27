import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type LoomError,
  openMemory,
  type StepEffectContext,
  systemClock,
} from '@loom/event-runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { defineFlow } from '../flow/define-flow.js';
import { createRuntime } from '../flow/flow-runtime.js';
import { terminalError } from '../index.js';
import { defineEffect } from './define-effect.js';
import { type EffectServer, serveEffects } from './effect-server.js';
import { PlacementDispatcher } from './placement-dispatcher.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(
  ...effects: Parameters<typeof serveEffects>[0]['effects']
): Promise<EffectServer> {
  const server = await serveEffects({ effects });
  cleanups.push(() => server.close());
  return server;
}

/** A raw HTTP server on 127.0.0.1 that answers every request with `status` and `body`. */
async function rawServer(status: number, body: string): Promise<string> {
  const server: Server = createServer((request, response) => {
    request.resume();
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function stepContext(attempt = 1, key = 'exec-1/0'): StepEffectContext {
  return {
    executionId: key.split('/')[0] as string,
    stepIndex: 0,
    stepName: 'step',
    idempotencyKey: key,
    attempt,
    signal: new AbortController().signal,
    clock: systemClock,
  };
}

/** Polls `check` every 5 ms until it holds; fails after 10 s. */
async function until(check: () => Promise<boolean>): Promise<void> {
  for (let waitedMs = 0; waitedMs < 10_000; waitedMs += 5) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('timed out after 10 s');
}

async function rejection(promise: Promise<unknown>): Promise<LoomError> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error as LoomError,
  );
}

const calls: string[] = [];
const embed = defineEffect('embed', (input: { text: string }, context) => {
  calls.push(`${context.idempotencyKey}#${context.attempt}`);
  return { length: input.text.length, key: context.idempotencyKey };
});

describe('PlacementDispatcher: where an effect runs', () => {
  it('runs here when this node has the tags and the handler, else on a remote that has the tags', async () => {
    const server = await serve(embed);
    const remotes = [{ name: 'gpu-1', url: server.url, tags: ['gpu'] }];
    const local = new PlacementDispatcher({ tags: ['gpu'], effects: [embed], remotes });
    expect(local.place(embed, { tags: ['gpu'] })).toEqual({ where: 'local' });
    const cpu = new PlacementDispatcher({ tags: ['cpu'], effects: [embed], remotes });
    const decision = cpu.place(embed, { tags: ['gpu'] });
    expect(decision.where).toBe('remote');
    // Without the handler here, even a fitting node sends it away.
    expect(new PlacementDispatcher({ tags: ['gpu'], remotes }).place(embed).where).toBe('remote');
    calls.length = 0;
    expect(
      await cpu.effect(embed, { text: 'abc' }, { tags: ['gpu'] })(stepContext(1, 'x/3')),
    ).toEqual({
      length: 3,
      key: 'x/3',
    });
    expect(calls).toEqual(['x/3#1']);
  });

  it('no node fits: the attempt fails with PLACEMENT_UNSATISFIED naming the effect and the tags; an unknown remote is REMOTE_UNKNOWN', async () => {
    const placement = new PlacementDispatcher({
      tags: ['cpu'],
      effects: [embed],
      remotes: [{ name: 'eu', url: 'http://127.0.0.1:1', tags: ['region:eu'] }],
    });
    expect(() => placement.place(embed, { tags: ['gpu'] })).toThrow(
      expect.objectContaining({ code: 'PLACEMENT_UNSATISFIED' }),
    );
    calls.length = 0;
    const unsatisfied = await rejection(
      placement.effect(embed, { text: 'a' }, { tags: ['gpu'] })(stepContext()),
    );
    expect(unsatisfied).toMatchObject({
      code: 'PLACEMENT_UNSATISFIED',
      fields: { effect: 'embed', tags: ['gpu'] },
    });
    const unknown = await rejection(
      placement.effect(embed, { text: 'a' }, { remote: 'gpu-9' })(stepContext()),
    );
    expect(unknown).toMatchObject({
      code: 'REMOTE_UNKNOWN',
      fields: { remote: 'gpu-9', effect: 'embed' },
    });
    expect(calls).toEqual([]);
  });

  it('a flow whose effect no node fits fails that step with PLACEMENT_UNSATISFIED, calling nothing', async () => {
    const placement = new PlacementDispatcher({ effects: [embed] });
    const index = defineFlow({ name: 'index-nowhere' }, async (ctx) =>
      ctx.step('embed', placement.effect(embed, { text: 'a' }, { tags: ['gpu'] })),
    );
    const runtime = createRuntime({ backend: openMemory(), flows: [index] });
    cleanups.push(() => runtime.shutdown());
    calls.length = 0;
    const handle = await runtime.start(index, undefined, { executionId: 'nowhere-1' });
    const error = await rejection(handle.result());
    expect(error.code).toBe('EXECUTION_FAILED');
    expect(error.fields).toMatchObject({ error: { code: 'PLACEMENT_UNSATISFIED' } });
    expect(calls).toEqual([]);
    const failed = (await runtime.store.read('nowhere-1')).filter((e) => e.type === 'step.failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.payload).toMatchObject({
      name: 'embed',
      error: { code: 'PLACEMENT_UNSATISFIED' },
    });
  });

  it('a completed remote step replays from the log: a later dispatcher without that remote does not matter', async () => {
    const server = await serve(embed);
    let placement = new PlacementDispatcher({ remotes: [{ name: 'w', url: server.url }] });
    const flow = defineFlow({ name: 'replayed' }, async (ctx) => {
      const first = await ctx.step(
        'embed',
        placement.effect(embed, { text: 'abc' }, { remote: 'w' }),
      );
      await ctx.waitForSignal('go');
      return first;
    });
    const backend = openMemory();
    const before = createRuntime({ backend, closeBackend: false, flows: [flow], timerPollMs: 0 });
    calls.length = 0;
    await before.start(flow, undefined, { executionId: 'replayed-1' });
    await until(async () =>
      (await before.store.read('replayed-1')).some((e) => e.type === 'execution.suspended'),
    );
    await before.shutdown();
    expect(calls).toEqual(['replayed-1/0#1']);

    placement = new PlacementDispatcher({});
    const after = createRuntime({ backend, flows: [flow], timerPollMs: 0 });
    cleanups.push(() => after.shutdown());
    await after.signal('replayed-1', 'go', null);
    await after.wakeDue();
    expect(await after.attach('replayed-1').result()).toEqual({ length: 3, key: 'replayed-1/0' });
    expect(calls).toEqual(['replayed-1/0#1']);
  });

  it('a runtime refuses bad tags, and a flow bad placement tags (INVALID_ARGUMENT)', () => {
    expect(() => createRuntime({ backend: openMemory(), tags: ['a b'] })).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        fields: expect.objectContaining({ path: 'tags' }),
      }),
    );
    expect(() =>
      defineFlow({ name: 'bad-placement', placement: { tags: [''] } }, async () => null),
    ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    const runtime = createRuntime({ backend: openMemory(), tags: ['gpu', 'gpu', 'region:eu'] });
    expect(runtime.tags).toEqual(['gpu', 'region:eu']);
    void runtime.shutdown();
  });

  it("a kernel flow (no defineFlow options, like an agent's) has no placement: any node registers it", async () => {
    const plain = { name: 'plain-kernel-flow', run: async () => 'ran' };
    const runtime = createRuntime({
      backend: openMemory(),
      tags: ['gpu'],
      flows: [plain as never],
    });
    expect(() => runtime.register(plain as never)).not.toThrow();
    await runtime.shutdown();
  });

  it('bad options are INVALID_ARGUMENT', () => {
    for (const options of [
      { tags: ['has space'] },
      { tags: 'gpu' as never },
      { remotes: [{ name: 'a', url: 'ftp://x' }] },
      {
        remotes: [
          { name: 'a', url: 'http://x' },
          { name: 'a', url: 'http://y' },
        ],
      },
      { remotes: [{ name: 'a', url: 'http://x', timeoutMs: 0 }] },
    ]) {
      expect(() => new PlacementDispatcher(options)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
    }
    expect(() => defineEffect('', () => 1)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  });

  it('a retry moves to the next fitting remote', async () => {
    const seen: string[] = [];
    const a = await serve(
      defineEffect('who', () => {
        seen.push('a');
        return 'a';
      }),
    );
    const b = await serve(
      defineEffect('who', () => {
        seen.push('b');
        return 'b';
      }),
    );
    const who = defineEffect('who', () => 'here');
    const placement = new PlacementDispatcher({
      remotes: [
        { name: 'a', url: a.url, tags: ['gpu'] },
        { name: 'b', url: b.url, tags: ['gpu'] },
      ],
    });
    const run = placement.effect(who, null, { tags: ['gpu'] });
    expect(await run(stepContext(1))).toBe('a');
    expect(await run(stepContext(2))).toBe('b');
    expect(await run(stepContext(3))).toBe('a');
    // The third call has the first one's idempotency key: 'a' answers it without running again.
    expect(seen).toEqual(['a', 'b']);
  });
});

describe('remote effects: the HTTP protocol and its failures', () => {
  it('the server answers a repeated idempotency key from the first run; a failed run is not kept', async () => {
    let runs = 0;
    let failNext = true;
    const count = defineEffect('count', () => {
      runs++;
      if (failNext) {
        failNext = false;
        throw new Error('flaky');
      }
      return runs;
    });
    const server = await serve(count);
    const placement = new PlacementDispatcher({ remotes: [{ name: 'w', url: server.url }] });
    const run = placement.effect(count, null, { remote: 'w' });
    const failed = await rejection(run(stepContext(1, 'e/0')));
    expect(failed.code).toBe('REMOTE_EFFECT_FAILED');
    expect(failed.fields).toMatchObject({ remote: 'w', effect: 'count', remoteName: 'Error' });
    expect(failed.message).toContain('flaky');
    expect(await run(stepContext(2, 'e/0'))).toBe(2);
    expect(await run(stepContext(3, 'e/0'))).toBe(2);
    expect(await run(stepContext(1, 'e/1'))).toBe(3);
    expect(runs).toBe(3);
  });

  it('a terminalError() thrown remotely comes back as TERMINAL, which a step never retries', async () => {
    let runs = 0;
    const charge = defineEffect('charge', () => {
      runs++;
      throw terminalError('card declined');
    });
    const server = await serve(charge);
    const placement = new PlacementDispatcher({ remotes: [{ name: 'pay', url: server.url }] });
    const flow = defineFlow({ name: 'pay' }, async (ctx) =>
      ctx.step('charge', placement.effect(charge, { cents: 100 }, { remote: 'pay' }), {
        retry: { attempts: 5, backoff: { initialMs: 1, jitter: 'none' } },
      }),
    );
    const runtime = createRuntime({ backend: openMemory(), flows: [flow] });
    cleanups.push(() => runtime.shutdown());
    const handle = await runtime.start(flow, undefined);
    const error = await rejection(handle.result());
    expect(error.message).toContain('card declined');
    expect(runs).toBe(1);
  });

  it('an effect the remote does not have is REMOTE_UNKNOWN (404)', async () => {
    const server = await serve(embed);
    const other = defineEffect('other', () => 1);
    const placement = new PlacementDispatcher({ remotes: [{ name: 'w', url: server.url }] });
    const error = await rejection(placement.effect(other, null, { remote: 'w' })(stepContext()));
    expect(error).toMatchObject({
      code: 'REMOTE_UNKNOWN',
      fields: { effect: 'other', status: 404 },
    });
  });

  it('a malformed answer is REMOTE_BAD_RESPONSE naming what was wrong', async () => {
    const cases: Array<[number, string, string]> = [
      [200, 'not json', 'a body that is not JSON'],
      [200, '{"nope":1}', 'no result'],
      [200, '42', 'a body that is not an object'],
      [500, '{"error":"boom"}', 'no error object'],
      [418, '{"error":{"message":"teapot"}}', 'the error "teapot"'],
      [200, `{"result":"${'x'.repeat(4 * 1024 * 1024)}"}`, 'a body over responseBytesMax'],
    ];
    for (const [status, body, reason] of cases) {
      const url = await rawServer(status, body);
      const placement = new PlacementDispatcher({ remotes: [{ name: 'odd', url }] });
      const error = await rejection(
        placement.effect(embed, { text: '' }, { remote: 'odd' })(stepContext()),
      );
      expect(error).toMatchObject({
        code: 'REMOTE_BAD_RESPONSE',
        fields: { status, reason, remote: 'odd' },
      });
    }
  });

  it('connection refused and a timeout are REMOTE_UNAVAILABLE with the reason', async () => {
    const port = await closedPort();
    const refused = new PlacementDispatcher({
      remotes: [{ name: 'gone', url: `http://127.0.0.1:${port}` }],
    });
    const error = await rejection(
      refused.effect(embed, { text: '' }, { remote: 'gone' })(stepContext()),
    );
    expect(error).toMatchObject({
      code: 'REMOTE_UNAVAILABLE',
      fields: { remote: 'gone', reason: 'ECONNREFUSED' },
    });

    let release: () => void = () => undefined;
    const stuck = defineEffect(
      'stuck',
      () =>
        new Promise<number>((resolve) => {
          release = () => resolve(1);
        }),
    );
    const server = await serve(stuck);
    const slow = new PlacementDispatcher({
      remotes: [{ name: 'slow', url: server.url, timeoutMs: 50 }],
    });
    const timedOut = await rejection(slow.effect(stuck, null, { remote: 'slow' })(stepContext()));
    release();
    expect(timedOut).toMatchObject({ code: 'REMOTE_UNAVAILABLE', fields: { reason: 'timeout' } });
  });

  it('the server refuses malformed requests with 400 and unknown paths with 404', async () => {
    const server = await serve(embed);
    const post = (path: string, body: string, headers: Record<string, string> = {}) =>
      fetch(`${server.url}${path}`, { method: 'POST', body, headers }).then((r) => r.status);
    expect(await post('/loom/effects/embed', '{"input":{"text":"a"}}')).toBe(400);
    expect(
      await post('/loom/effects/embed', 'garbage', {
        'loom-idempotency-key': 'k',
        'loom-attempt': '1',
      }),
    ).toBe(400);
    expect(await post('/elsewhere', '{}')).toBe(404);
    expect(await post('/loom/effects/%E0%A4%A', '{"input":1}')).toBe(400);
    expect(
      await post('/loom/effects/embed', '{"input":{"text":"a"}}', {
        'loom-idempotency-key': 'k',
        'loom-attempt': '1',
      }),
    ).toBe(200);
  });
});
