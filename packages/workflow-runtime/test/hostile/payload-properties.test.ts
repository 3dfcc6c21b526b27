/**
 * Property-based checks of the value rules (issue 14, ADR 0011) through the public API, on
 * memory and a SQLite file: any JSON value (lone surrogates, NUL, `__proto__` keys, -0 included)
 * given as input comes back from a step, and from a replay in a fresh runtime, as the same text;
 * any value at all sent as a signal payload is either refused with PAYLOAD_NOT_JSON or
 * LIMIT_EXCEEDED (nothing written) or received as exactly the value the log holds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Backend, ErrorCode } from '@loom/event-runtime';
import { createRuntime, defineFlow, isLoomError, openMemory } from '@loom/workflow-runtime';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';

const directory = mkdtempSync(join(tmpdir(), 'loom-payload-props-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** JSON text that keeps -0 apart from 0 and every own key, `__proto__` included. */
function exact(value: unknown): string {
  return JSON.stringify(value, (_key, inner) => (Object.is(inner, -0) ? '<-0>' : inner));
}

const key = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 6 }),
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', ''),
);
const json = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.constantFrom(-0, 5e-324, Number.MAX_SAFE_INTEGER),
    fc.string({ unit: 'binary', maxLength: 20 }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.array(fc.tuple(key, tie('value')), { maxLength: 4 }).map((entries) => {
      // Own keys only, `__proto__` as data, as JSON.parse makes them.
      const object: Record<string, unknown> = {};
      for (const [name, inner] of entries) {
        Object.defineProperty(object, name, {
          value: inner,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return object;
    }),
  ),
})).value;

const seen = new Map<string, unknown[]>();
const roundTrip = defineFlow({ name: 'prop-round-trip' }, async (ctx, input: unknown) => {
  const result = await ctx.step('copy', () => input);
  const runs = seen.get(ctx.executionId) ?? [];
  runs.push(exact({ input, result }));
  seen.set(ctx.executionId, runs);
  const got = (await ctx.waitForSignal('go')) as { received: boolean; payload?: unknown };
  return (got.received ? got.payload : null) as never;
});

const backends: ReadonlyArray<readonly [string, () => Backend]> = [
  ['memory', () => openMemory()],
  ['sqlite', () => openSqlite({ path: join(directory, 'props.db'), migrate: true })],
];

async function lastType(backend: Backend, id: string): Promise<string | undefined> {
  const events = await backend.events.read(id);
  return events[events.length - 1]?.type;
}

async function waitFor(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe.each(backends)('payload properties on %s (fast-check)', (name, open) => {
  it('any JSON value reaches the flow, a step and a replay as the same text, and the log verifies', async () => {
    const backend = open();
    let runtime = createRuntime({
      backend,
      flows: [roundTrip],
      closeBackend: false,
      timerPollMs: 20,
    });
    let counter = 0;
    try {
      await fc.assert(
        fc.asyncProperty(json, async (value) => {
          const id = `prop-${name}-${++counter}`;
          await runtime.start(roundTrip, value as never, { executionId: id });
          await waitFor(async () =>
            ['signal.waiting', 'execution.suspended'].includes((await lastType(backend, id)) ?? ''),
          );
          await runtime.shutdown();
          runtime = createRuntime({
            backend,
            flows: [roundTrip],
            closeBackend: false,
            timerPollMs: 20,
          });
          await runtime.signal(id, 'go', value);
          const output = await runtime.attach(id).result();
          const runs = seen.get(id) ?? [];
          expect(runs).toHaveLength(2);
          expect(runs[1]).toBe(runs[0]);
          expect(runs[0]).toBe(exact({ input: value, result: value }));
          expect(exact(output)).toBe(exact(value));
          expect((await backend.events.verify(id)).ok).toBe(true);
        }),
        { numRuns: 60 },
      );
    } finally {
      await runtime.shutdown();
      await backend.close();
    }
  });

  it('any value as a signal payload is received exactly or refused with a payload code, writing nothing', async () => {
    const backend = open();
    const runtime = createRuntime({
      backend,
      flows: [roundTrip],
      closeBackend: false,
      timerPollMs: 20,
    });
    const target = `prop-signal-target-${name}`;
    await runtime.start(roundTrip, null as never, { executionId: target });
    let accepted = 0;
    let refused = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.oneof(fc.anything(), json), async (payload) => {
          const before = (await backend.events.readSignals(target)).length;
          try {
            await runtime.signal(target, 'probe', payload);
          } catch (error) {
            refused += 1;
            expect(isLoomError(error), String(error)).toBe(true);
            expect([ErrorCode.PAYLOAD_NOT_JSON, ErrorCode.LIMIT_EXCEEDED]).toContain(
              (error as { code: string }).code,
            );
            expect(await backend.events.readSignals(target)).toHaveLength(before);
            return;
          }
          accepted += 1;
          const inbox = await backend.events.readSignals(target);
          expect(inbox).toHaveLength(before + 1);
          // What the log holds is what JSON gives back: top-level undefined is null.
          expect(exact(inbox[inbox.length - 1]?.payload)).toBe(exact(payload ?? null));
        }),
        { numRuns: 300 },
      );
      expect(accepted).toBeGreaterThan(0);
      expect(refused).toBeGreaterThan(0);
    } finally {
      await runtime.shutdown();
      await backend.close();
    }
  });
});
