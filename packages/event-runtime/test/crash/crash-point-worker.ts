// A worker of the crash-point enumeration. One incarnation per point: it first finishes what
// the previous point's incarnation left when it died (LOOM_POINT_PREVIOUS, an id prefix:
// recovery, timers and signals resume it; the worker waits for its parent and receiver to end),
// prints `previous-done`, then runs the point's own executions (prefix LOOM_POINT_PREFIX) with
// the crash point LOOM_POINT armed: the process SIGKILLs itself there. A point it never reaches
// ends in `survived`. Every plain effect run is one line `<execution>/<step>` in
// LOOM_CRASH_EFFECTS; the transactional step writes one `crash_side` row.
//
// The flows: a receiver waits for signal `ping`; the parent runs step `a`, a transaction, a
// child (one step `c`), a step that signals the receiver (with its idempotency key), a durable
// sleep (it suspends: inlineWaitMs 0) and step `b`.
import { appendFileSync } from 'node:fs';
import type { EventEnvelope, EventStore, Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { openCrashBackend } from './crash-backend.js';
import { type CrashPoint, crashPoints } from './crash-points.js';

const effects = process.env.LOOM_CRASH_EFFECTS as string;
const previousDeadlineMs = 15_000;
const previous = process.env.LOOM_POINT_PREVIOUS ?? '';
const prefix = process.env.LOOM_POINT_PREFIX ?? '';
const point: CrashPoint | undefined = crashPoints.find(
  (candidate) => candidate.name === process.env.LOOM_POINT,
);

const die = (): never => {
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable');
};
const armed = (where: string, executionId: string) =>
  point?.body === where && executionId.startsWith(`${prefix}-`);

/**
 * The store, with the point's write hooks: SIGKILL before or after the first append (a batch of
 * appends included, or `transact`, or `sendSignal`) that carries the point's event type for the
 * point's execution.
 */
function withCrashPoint(store: EventStore): EventStore {
  if (point?.write === undefined) return store;
  const { phase, call, type, execution } = point.write;
  const target = `${prefix}-${execution}`;
  let fired = false;
  const hit = (envelopes: readonly EventEnvelope[]) =>
    !fired &&
    envelopes.some((envelope) => envelope.executionId === target && envelope.type === type);
  const hooked = async <T>(matches: boolean, run: () => Promise<T>): Promise<T> => {
    if (!matches) return run();
    fired = true;
    if (phase === 'before') die();
    const result = await run();
    die();
    return result;
  };
  return new Proxy(store, {
    get(inner, property) {
      const value = Reflect.get(inner, property, inner);
      if (typeof value !== 'function') return value;
      if (property === 'append' && call === 'append') {
        return (envelopes: readonly EventEnvelope[], ...rest: unknown[]) =>
          hooked(hit(envelopes), () => value.call(inner, envelopes, ...rest));
      }
      // The runtime's group commit sends one turn's appends of several executions in one batch:
      // the point is before or after the batch that carries its event.
      if (property === 'appendBatch' && call === 'append') {
        return (requests: ReadonlyArray<{ envelopes: readonly EventEnvelope[] }>) =>
          hooked(
            requests.some((request) => hit(request.envelopes)),
            () => value.call(inner, requests),
          );
      }
      if (property === 'transact' && call === 'transact') {
        // After the commit: the envelopes are built inside the transaction, so by the time it
        // returns we know whether it recorded the point's step.
        return async (
          work: unknown,
          envelopes: (result: unknown) => readonly EventEnvelope[],
          guard: unknown,
        ) => {
          let matches = false;
          const result = await value.call(
            inner,
            work,
            (outcome: unknown) => {
              const built = envelopes(outcome);
              matches = hit(built);
              return built;
            },
            guard,
          );
          if (matches) die();
          return result;
        };
      }
      if (property === 'sendSignal' && call === 'sendSignal') {
        return (signal: { executionId: string }, ...rest: unknown[]) =>
          hooked(!fired && signal.executionId === target, () => value.call(inner, signal, ...rest));
      }
      return value.bind(inner);
    },
  });
}

const backend = await openCrashBackend();
const store = withCrashPoint(backend.store);
const record = (key: string) => appendFileSync(effects, `${key}\n`);

const child: Flow<null, number> = {
  name: 'point-child',
  run: (ctx) =>
    ctx.step('c', (effect) => {
      record(`${effect.executionId}/c`);
      return 2;
    }),
};

const receiver: Flow<null, string> = {
  name: 'point-receiver',
  run: async (ctx) => {
    const wait = await ctx.waitForSignal('ping');
    return wait.received ? String(wait.payload) : 'timed out';
  },
};

const parent: Flow<null, string> = {
  name: 'point-parent',
  run: async (ctx) => {
    const id = ctx.executionId;
    const base = id.slice(0, -'-parent'.length);
    const a = await ctx.step('a', (effect) => {
      record(`${id}/a`);
      if (armed('effect', effect.executionId)) die();
      return 1;
    });
    await ctx.transaction('tx', (tx) => {
      const inserted = backend.insertSide(tx, id);
      if (!armed('transaction', id)) return inserted;
      // Inside the transaction, after its write, before its commit.
      if (inserted === undefined) die();
      return inserted?.then(die);
    });
    const c = await ctx.child(child, null, { executionId: `${base}-child` });
    await ctx.step('notify', async (effect) => {
      record(`${id}/notify`);
      await runtime.signal(`${base}-receiver`, 'ping', 'hello', {
        idempotencyKey: effect.idempotencyKey,
      });
    });
    await ctx.sleep(200, 'nap');
    const b = await ctx.step('b', () => {
      record(`${id}/b`);
      return 4;
    });
    return `done ${a + c + b}`;
  },
};

const flows = [child, receiver, parent] as Flow<never, unknown>[];
const runtime = createKernelRuntime({
  store,
  flows,
  recoverQuietMs: 0,
  inlineWaitMs: 0,
  timerPollMs: 100,
  recoverEveryMs: 500,
  onError: (error) => process.stderr.write(`onError: ${String(error)}\n`),
});
await runtime.recover();
if (previous !== '') {
  // As a client whose start was never acknowledged would: start again (a start of an existing
  // id returns its handle).
  const waiting = await runtime.start(receiver, null, { executionId: `${previous}-receiver` });
  const parentHandle = await runtime.start(parent, null, { executionId: `${previous}-parent` });
  // Bounded: a point whose work never ends is reported by the checks, and the next point runs.
  let timer: NodeJS.Timeout | undefined;
  const stuck = await Promise.race([
    // A failed one is judged by the checks, like a stuck one.
    Promise.allSettled([parentHandle.result(), waiting.result()]).then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), previousDeadlineMs);
    }),
  ]);
  clearTimeout(timer);
  if (stuck) process.stdout.write(`previous-stuck\n`);
}
process.stdout.write('previous-done\n');
if (point !== undefined) {
  await runtime.start(receiver, null, { executionId: `${prefix}-receiver` });
  const handle = await runtime.start(parent, null, { executionId: `${prefix}-parent` });
  await handle.result();
  await runtime.attach(`${prefix}-receiver`).result();
  process.stdout.write('survived\n');
}
await runtime.shutdown();
await backend.close();
