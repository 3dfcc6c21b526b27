/**
 * The hostile-input corpus (issue 14), through the public API (`createRuntime`, `defineFlow`,
 * `start`, `signal`, `cancel`, `enqueue`, `findExecutions`) on memory, a SQLite file and a
 * Postgres schema of its own. Every refused input must be a LoomError with the code that names
 * the problem, write nothing (the whole log, the target's inbox and the queue are counted before
 * and after), leave `Object.prototype` as it was, and leave the runtime usable. Every accepted
 * hostile value must reach the flow, on its first run and on a replay in a fresh runtime, as
 * the same value.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Backend, ErrorCode } from '@loom/event-runtime';
import {
  createRuntime,
  defineFlow,
  isLoomError,
  openMemory,
  type Runtime,
  WorkflowErrorCode,
} from '@loom/workflow-runtime';
import { openPostgres } from '@loom/workflow-runtime/postgres';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const directory = mkdtempSync(join(tmpdir(), 'loom-hostile-'));
const schema = `h_reliab_hostile_${process.pid}`;
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** A value refused, and the code that must name why. */
type Refusal = readonly [label: string, value: () => unknown, code: string];

function nested(depth: number, leaf: unknown, wrap: (inner: unknown) => unknown): unknown {
  let value = leaf;
  for (let level = 0; level < depth; level++) value = wrap(value);
  return value;
}

/** Payloads JSON cannot hold, or over a limit: each one refused with its code. */
const refusedPayloads: Refusal[] = [
  ['a function', () => () => 1, ErrorCode.PAYLOAD_NOT_JSON],
  ['a BigInt', () => 10n ** 30n, ErrorCode.PAYLOAD_NOT_JSON],
  ['a symbol', () => Symbol('s'), ErrorCode.PAYLOAD_NOT_JSON],
  ['NaN', () => Number.NaN, ErrorCode.PAYLOAD_NOT_JSON],
  ['Infinity', () => Number.POSITIVE_INFINITY, ErrorCode.PAYLOAD_NOT_JSON],
  ['-Infinity nested', () => ({ a: [Number.NEGATIVE_INFINITY] }), ErrorCode.PAYLOAD_NOT_JSON],
  ['a Date', () => new Date(0), ErrorCode.PAYLOAD_NOT_JSON],
  ['a Map', () => new Map([[1, 2]]), ErrorCode.PAYLOAD_NOT_JSON],
  ['a Set', () => new Set([1]), ErrorCode.PAYLOAD_NOT_JSON],
  ['a class instance', () => new (class Money {})(), ErrorCode.PAYLOAD_NOT_JSON],
  ['a Uint8Array', () => new Uint8Array(4), ErrorCode.PAYLOAD_NOT_JSON],
  ['a boxed string', () => Object('s'), ErrorCode.PAYLOAD_NOT_JSON],
  ['undefined inside an object', () => ({ a: undefined }), ErrorCode.PAYLOAD_NOT_JSON],
  ['undefined inside an array', () => [1, undefined], ErrorCode.PAYLOAD_NOT_JSON],
  // biome-ignore lint/suspicious/noSparseArray: the hole is the point
  ['a sparse array', () => [1, , 3], ErrorCode.PAYLOAD_NOT_JSON],
  ['a symbol key', () => ({ [Symbol('k')]: 1 }), ErrorCode.PAYLOAD_NOT_JSON],
  ['a toJSON method', () => ({ toJSON: () => 'x' }), ErrorCode.PAYLOAD_NOT_JSON],
  [
    'a cycle',
    () => {
      const cyclic: Record<string, unknown> = { a: 1 };
      cyclic.self = { back: cyclic };
      return cyclic;
    },
    ErrorCode.PAYLOAD_NOT_JSON,
  ],
  [
    'a getter that throws',
    () =>
      Object.defineProperty({}, 'x', {
        enumerable: true,
        get() {
          throw new Error('getter');
        },
      }),
    ErrorCode.PAYLOAD_NOT_JSON,
  ],
  [
    'a revoked proxy',
    () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    },
    ErrorCode.PAYLOAD_NOT_JSON,
  ],
  ['arrays nested 600 deep', () => nested(600, 1, (inner) => [inner]), ErrorCode.LIMIT_EXCEEDED],
  [
    'objects nested 600 deep',
    () => nested(600, null, (inner) => ({ a: inner })),
    ErrorCode.LIMIT_EXCEEDED,
  ],
  ['a 2 MiB string', () => 'x'.repeat(2 * 1024 * 1024), ErrorCode.LIMIT_EXCEEDED],
  ['an array of 2 million numbers', () => new Array(2_000_000).fill(7), ErrorCode.LIMIT_EXCEEDED],
  [
    // 200 references to one 5 MB string: 1 GB of JSON, more than a string can hold.
    'a gigabyte of JSON from one shared string',
    () => new Array(200).fill('y'.repeat(5_000_000)),
    ErrorCode.LIMIT_EXCEEDED,
  ],
];

/** Ids and names refused as keys, with their codes. */
const refusedIds: Refusal[] = [
  ['empty', () => '', ErrorCode.INVALID_ENVELOPE],
  ['a NUL', () => 'a\u0000b', ErrorCode.INVALID_ENVELOPE],
  ['a lone lead surrogate', () => 'x\uD800', ErrorCode.INVALID_ENVELOPE],
  ['a lone trail surrogate', () => '\uDFFFx', ErrorCode.INVALID_ENVELOPE],
  ['10,000 characters', () => 'i'.repeat(10_000), ErrorCode.LIMIT_EXCEEDED],
  ['201 characters', () => 'i'.repeat(201), ErrorCode.LIMIT_EXCEEDED],
];

/** Values the log holds, hostile as they are: each must come back exactly. */
const acceptedPayloads: ReadonlyArray<readonly [string, unknown]> = [
  [
    '__proto__ and constructor keys',
    JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}'),
  ],
  ['SQL metacharacters', '\'; DROP TABLE loom_events; -- %_\\"`$1'],
  ['NUL and lone surrogates in text', { text: 'a\u0000b\uD800c\uDFFF', 'k\u0000\uDBFF': 1 }],
  ['-0, extreme doubles and safe integers', [-0, 5e-324, 1.7976931348623157e308, 2 ** 53 - 1]],
  ['emoji and combining marks', 'ñ̃👩‍👩‍👧‍👦\u202E'],
  ['arrays nested 500 deep', nested(500, 'leaf', (inner) => [inner])],
  ['a 100,000-element array', new Array(100_000).fill(0).map((_, index) => index)],
  ['a 500,000-character string', 'z'.repeat(500_000)],
  ['a null-prototype object', Object.assign(Object.create(null), { a: 1 })],
  ['empty containers', { a: {}, b: [], c: '' }],
];

/** Ids the log holds: SQL and prototype names, the longest allowed, non-ASCII. */
const acceptedIds = [
  "'; DROP TABLE loom_events; --",
  "x' OR '1'='1",
  '%_\\',
  '__proto__',
  'constructor',
  'hasOwnProperty',
  ' ',
  'ñ👩‍👩‍👧',
  'i'.repeat(200),
];

interface Opened {
  backend: Backend;
  drop(): Promise<void>;
  /**
   * Events in the whole log. Postgres counts its table: its readAll holds a row back while an
   * older transaction on the server is open (another test's, on the shared server), so a count
   * through readAll could grow between two reads with nothing written in between.
   */
  countEvents(): Promise<number>;
}

const backends: ReadonlyArray<readonly [string, () => Promise<Opened>]> = [
  [
    'memory',
    async () => {
      const backend = openMemory();
      return { backend, drop: async () => {}, countEvents: () => eventCount(backend) };
    },
  ],
  [
    'sqlite',
    async () => {
      const backend = openSqlite({ path: join(directory, 'hostile.db'), migrate: true });
      return { backend, drop: async () => {}, countEvents: () => eventCount(backend) };
    },
  ],
  [
    'postgres',
    async () => {
      const backend = await openPostgres({ connectionString: pgUrl, schema });
      await backend.events.connectionPool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await backend.migrate();
      return {
        backend,
        drop: async () => {
          await backend.events.connectionPool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        },
        countEvents: async () =>
          Number(
            (
              await backend.events.connectionPool.query(
                `SELECT count(*) AS n FROM "${schema}".events`,
              )
            ).rows[0].n,
          ),
      };
    },
  ],
];

/** What each run of the `observe` flow saw, by execution id, in order. */
const seen = new Map<string, unknown[]>();

const echo = defineFlow({ name: 'hostile-echo' }, async (ctx, input: unknown) =>
  ctx.step('echo', () => input),
);
const waiter = defineFlow({ name: 'hostile-waiter' }, async (ctx) => {
  const got = (await ctx.waitForSignal('go')) as { received: boolean; payload?: unknown };
  return (got.received ? got.payload : null) as never;
});
/** Sees its input and a step's copy of it, suspends, and sees both again on the replay. */
const observe = defineFlow({ name: 'hostile-observe' }, async (ctx, input: unknown) => {
  const result = await ctx.step('copy', () => input);
  const runs = seen.get(ctx.executionId) ?? [];
  runs.push({ input, result });
  seen.set(ctx.executionId, runs);
  const signal = (await ctx.waitForSignal('go')) as { received: boolean; payload?: unknown };
  return (signal.received ? signal.payload : 'no signal') as never;
});
const flows = [echo, waiter, observe];

async function codeOf(act: () => Promise<unknown>): Promise<string> {
  try {
    await act();
  } catch (error) {
    if (isLoomError(error)) return error.code;
    return `not a LoomError: ${String(error)}`;
  }
  return 'accepted';
}

async function eventCount(backend: Backend): Promise<number> {
  let count = 0;
  let afterPosition = 0;
  for (;;) {
    const page = await backend.events.readAll({ afterPosition, limit: 10_000 });
    if (page.length === 0) return count;
    count += page.length;
    afterPosition = page[page.length - 1]?.position as number;
  }
}

/** JSON text that keeps -0 apart from 0 and every own key, `__proto__` included. */
function exact(value: unknown): string {
  return JSON.stringify(value, (_key, inner) => (Object.is(inner, -0) ? '<-0>' : inner));
}

/**
 * The last event of an execution that waits for a signal, suspended: an earlier one (a wait
 * still inline) is followed by `execution.suspended` a moment later, which a test counting the
 * log would see as a write.
 */
const waiting = new Set(['execution.suspended']);

/** Polls `condition` every 10 ms until it holds; fails after 5 s. */
async function waitFor(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const prototypeKeys = () => Object.getOwnPropertyNames(Object.prototype).sort();

describe.each(backends)('hostile input on %s', (_name, open) => {
  let opened: Opened;
  let runtime: Runtime;
  const waiterId = 'hostile-waiting';
  const before = prototypeKeys();

  /** The whole log, the waiter's inbox and the queue: what "nothing written" compares. */
  async function written() {
    const { backend } = opened;
    return {
      events: await opened.countEvents(),
      signals: (await backend.events.readSignals(waiterId)).length,
      queue: await runtime.queueStats('hostile-queue'),
    };
  }

  async function lastEventType(id: string): Promise<string | undefined> {
    const events = await opened.backend.events.read(id);
    return events[events.length - 1]?.type;
  }

  async function refuses(act: () => Promise<unknown>, code: string): Promise<void> {
    const was = await written();
    expect(await codeOf(act)).toBe(code);
    expect(await written()).toEqual(was);
  }

  beforeAll(async () => {
    opened = await open();
    runtime = createRuntime({ backend: opened.backend, flows, closeBackend: false });
    await runtime.start(waiter, undefined as never, { executionId: waiterId });
    await waitFor(async () => waiting.has((await lastEventType(waiterId)) ?? ''));
  });

  afterAll(async () => {
    await runtime?.shutdown();
    await opened?.drop();
    await opened?.backend.close();
  });

  it.each(refusedPayloads)('start refuses %s as input', async (_label, value, code) => {
    await refuses(() => runtime.start(echo, value() as never), code);
  });

  it.each(refusedPayloads)('signal refuses %s as payload', async (_label, value, code) => {
    await refuses(() => runtime.signal(waiterId, 'go', value()), code);
  });

  it.each(refusedPayloads)('enqueue refuses %s as input', async (_label, value, code) => {
    await refuses(() => runtime.enqueue('hostile-queue', echo, value() as never), code);
  });

  it.each(refusedIds)('start refuses an execution id with %s', async (_label, id, code) => {
    await refuses(() => runtime.start(echo, 1 as never, { executionId: id() as string }), code);
  });

  it.each(refusedIds)('signal refuses a name with %s', async (_label, name, code) => {
    await refuses(() => runtime.signal(waiterId, name() as string, 1), code);
  });

  it.each(refusedIds)('signal refuses an idempotency key with %s', async (_label, key, code) => {
    await refuses(
      () => runtime.signal(waiterId, 'go', 1, { idempotencyKey: key() as string }),
      code,
    );
  });

  it.each(refusedIds.filter(([label]) => label !== '201 characters'))(
    'signal and attach refuse a target id with %s',
    async (_label, id, code) => {
      await refuses(() => runtime.signal(id() as string, 'go', 1), code);
      expect(await codeOf(() => runtime.attach(id() as string).result())).toBe(code);
    },
  );

  it('signal to an id that was never started is EXECUTION_NOT_FOUND, for SQL and prototype names', async () => {
    for (const id of ["nobody' OR '1'='1", '__proto__', 'constructor']) {
      await refuses(() => runtime.signal(id, 'go', 1), ErrorCode.EXECUTION_NOT_FOUND);
    }
  });

  it('cancel refuses a reason over cancelReasonLengthMax and the execution still waits', async () => {
    await refuses(() => runtime.cancel(waiterId, 'r'.repeat(10_000)), ErrorCode.LIMIT_EXCEEDED);
    expect(await runtime.status(waiterId)).toBe('running');
    expect(waiting.has((await lastEventType(waiterId)) ?? '')).toBe(true);
  });

  it('enqueue refuses hostile queue names, item ids and dedupe keys', async () => {
    for (const [, id, code] of refusedIds) {
      const bad = id() as string;
      const expected = code === ErrorCode.INVALID_ENVELOPE ? ErrorCode.INVALID_ARGUMENT : code;
      await refuses(() => runtime.enqueue(bad, echo, 1 as never), expected);
      await refuses(
        () => runtime.enqueue('hostile-queue', echo, 1 as never, { itemId: bad }),
        expected,
      );
      if (bad !== '') {
        await refuses(
          () => runtime.enqueue('hostile-queue', echo, 1 as never, { dedupeKey: bad }),
          expected,
        );
      }
    }
  });

  it('findExecutions refuses hostile cursors and limits, and treats SQL in a flow name as a name', async () => {
    for (const cursor of ['\uD800', 'a\u0000']) {
      expect(await codeOf(() => runtime.findExecutions({ cursor }))).toBe(
        ErrorCode.INVALID_ARGUMENT,
      );
    }
    for (const limit of [Number.NaN, -1, 1.5, 10_000_000]) {
      expect(await codeOf(() => runtime.findExecutions({ limit }))).toBe(
        ErrorCode.INVALID_ARGUMENT,
      );
    }
    expect(await codeOf(() => runtime.findExecutions({ createdFromMs: Number.NaN }))).toBe(
      ErrorCode.INVALID_ARGUMENT,
    );
    const page = await runtime.findExecutions({ flow: "x' OR '1'='1" });
    expect(page.executions).toEqual([]);
    const all = await runtime.findExecutions({ cursor: "' OR 1=1 --" });
    expect(all.executions.every((execution) => execution.id > "' OR 1=1 --")).toBe(true);
  });

  it('defineFlow refuses hostile flow names before anything runs', () => {
    for (const name of [
      "x'; DROP TABLE loom_events; --",
      'a\u0000',
      '\uD800',
      'n'.repeat(10_000),
      '',
    ]) {
      let code = 'accepted';
      try {
        defineFlow({ name }, async () => null);
      } catch (error) {
        code = isLoomError(error) ? error.code : 'not a LoomError';
      }
      expect(code).toBe(WorkflowErrorCode.INVALID_ARGUMENT);
    }
  });

  it('accepted hostile ids run, each its own execution, and findExecutions pages through them', async () => {
    for (const id of acceptedIds) {
      const handle = await runtime.start(echo, id as never, { executionId: id });
      expect(handle.executionId).toBe(id);
      expect(await handle.result()).toBe(id);
      expect((await opened.backend.events.verify(id)).ok).toBe(true);
    }
    const found: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await runtime.findExecutions({
        flow: echo,
        limit: 2,
        ...(cursor === undefined ? {} : { cursor }),
      });
      found.push(...page.executions.map((execution) => execution.id));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(found.filter((id) => acceptedIds.includes(id)).sort()).toEqual([...acceptedIds].sort());
  });

  it.each(acceptedPayloads)(
    'accepts %s, and a replay in a fresh runtime sees exactly what the first run saw',
    async (label, value) => {
      const id = `hostile-replay-${label.replace(/[^a-z0-9]+/gi, '-')}`;
      seen.delete(id);
      await runtime.start(observe, value as never, { executionId: id });
      await waitFor(async () => waiting.has((await lastEventType(id)) ?? ''));
      const first = (seen.get(id) ?? []) as Array<{ input: unknown; result: unknown }>;
      expect(first).toHaveLength(1);
      expect(first[0]?.input).toEqual(value);
      expect(first[0]?.result).toEqual(value);

      // A fresh runtime on the same store replays the flow from the log.
      await runtime.shutdown();
      runtime = createRuntime({ backend: opened.backend, flows, closeBackend: false });
      await runtime.signal(id, 'go', value);
      const handle = runtime.attach(id);
      await runtime.resume(id).catch(() => undefined);
      const output = await handle.result();
      expect(output).toEqual(value);
      const runs = seen.get(id) as unknown[];
      expect(runs).toHaveLength(2);
      // Compared as exact text (-0 kept), since an own `__proto__` key defeats deep equality.
      expect(exact(runs[1])).toBe(exact(runs[0]));
      expect(exact((runs[0] as { input: unknown }).input)).toBe(exact(value));
      expect((await opened.backend.events.verify(id)).ok).toBe(true);
    },
  );

  it('leaves Object.prototype as it was, and the runtime still runs a normal flow', async () => {
    expect(prototypeKeys()).toEqual(before);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const handle = await runtime.start(echo, { order: 42 } as never);
    expect(await handle.result()).toEqual({ order: 42 });
    expect(await runtime.signal(waiterId, 'go', 'done')).toMatchObject({ duplicate: false });
    expect(await runtime.attach(waiterId).result()).toBe('done');
  });
});
