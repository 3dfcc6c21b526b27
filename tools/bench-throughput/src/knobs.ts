/** Backends a sweep can run on. */
export type Backend = 'memory' | 'sqlite' | 'postgres';
/** Effect shapes: a no-op effect (the write ceiling) or an I/O-bound one (`ioMs` of waiting). */
export type Shape = 'noop' | 'io';
/** Caller-chosen execution ids (idempotent start) or ids the runtime mints (ULIDs). */
export type IdStyle = 'caller' | 'minted';

export const allBackends: readonly Backend[] = ['memory', 'sqlite', 'postgres'];
export const allShapes: readonly Shape[] = ['noop', 'io'];
export const allIdStyles: readonly IdStyle[] = ['caller', 'minted'];
/** Sections of `bench`; `bench:lease` is P9 alone. */
export const allSections = ['p1', 'p3', 'p8', 'p11'] as const;
export type Section = (typeof allSections)[number];

/** Every `LOOM_BENCH_*` setting, parsed and checked. */
export interface Knobs {
  pgUrl: string;
  backends: Backend[];
  /** Overrides every suite's default concurrency levels (P11 stays at its defined c = 32). */
  concs: number[] | undefined;
  repeats: number;
  /** Operations per memory cell (executions; P1 does not run on memory). */
  execs: number;
  /** Operations per SQLite cell (P1: appends; P3, P9, P11: executions). */
  sqliteExecs: number;
  /** Operations per Postgres cell (P1: appends; P3, P9, P11: executions). */
  pgExecs: number;
  /** Executions per cell of the I/O-bound shape (P9). */
  ioExecs: number;
  ioMs: number;
  shapes: Shape[];
  ids: IdStyle[];
  /** Reserved for the coalescing store (P2), which does not exist yet. */
  batches: number[] | undefined;
  sections: Section[];
  /** `bench:lease` only: the whole P9 sweep instead of its quick default (`leaseQuickDefaults`). */
  leaseFull: boolean;
  /** `bench:peers` only: the database DBOS gets on the server, dropped and created each run. */
  dbosDatabase: string;
}

export type Env = Readonly<Record<string, string | undefined>>;

/** The knob names, for the command line printed above each table. */
export const knobNames = [
  'LOOM_BENCH_PG_URL',
  'LOOM_BENCH_BACKENDS',
  'LOOM_BENCH_CONCS',
  'LOOM_BENCH_REPEATS',
  'LOOM_BENCH_EXECS',
  'LOOM_BENCH_SQLITE_EXECS',
  'LOOM_BENCH_PG_EXECS',
  'LOOM_BENCH_IO_EXECS',
  'LOOM_BENCH_IO_MS',
  'LOOM_BENCH_SHAPES',
  'LOOM_BENCH_IDS',
  'LOOM_BENCH_BATCHES',
  'LOOM_BENCH_SECTIONS',
  'LOOM_BENCH_LEASE_FULL',
  'LOOM_BENCH_DBOS_DATABASE',
] as const;

export const defaultPgUrl = 'postgres://root@127.0.0.1:5432/test';

/** Largest count any knob accepts: bounds a typo (an extra zero or three) to minutes, not days. */
const countMax = 10_000_000;

/** Parses every `LOOM_BENCH_*` knob; throws naming the knob and what it accepts. */
export function readKnobs(env: Env): Knobs {
  return {
    pgUrl: nonEmpty(env.LOOM_BENCH_PG_URL) ?? defaultPgUrl,
    backends: choices('LOOM_BENCH_BACKENDS', env.LOOM_BENCH_BACKENDS, allBackends),
    concs: integers('LOOM_BENCH_CONCS', env.LOOM_BENCH_CONCS, 1, 100_000),
    repeats: integer('LOOM_BENCH_REPEATS', env.LOOM_BENCH_REPEATS, 5, 1, 1000),
    execs: integer('LOOM_BENCH_EXECS', env.LOOM_BENCH_EXECS, 10_000, 1, countMax),
    sqliteExecs: integer(
      'LOOM_BENCH_SQLITE_EXECS',
      env.LOOM_BENCH_SQLITE_EXECS,
      1_500,
      1,
      countMax,
    ),
    pgExecs: integer('LOOM_BENCH_PG_EXECS', env.LOOM_BENCH_PG_EXECS, 1_500, 1, countMax),
    ioExecs: integer('LOOM_BENCH_IO_EXECS', env.LOOM_BENCH_IO_EXECS, 1_000, 1, countMax),
    ioMs: integer('LOOM_BENCH_IO_MS', env.LOOM_BENCH_IO_MS, 20, 0, 60_000),
    shapes: choices('LOOM_BENCH_SHAPES', env.LOOM_BENCH_SHAPES, allShapes),
    ids: choices('LOOM_BENCH_IDS', env.LOOM_BENCH_IDS, allIdStyles),
    batches: integers('LOOM_BENCH_BATCHES', env.LOOM_BENCH_BATCHES, 1, 10_000),
    sections: choices('LOOM_BENCH_SECTIONS', env.LOOM_BENCH_SECTIONS, allSections),
    leaseFull: integer('LOOM_BENCH_LEASE_FULL', env.LOOM_BENCH_LEASE_FULL, 0, 0, 1) === 1,
    dbosDatabase: identifier(
      'LOOM_BENCH_DBOS_DATABASE',
      env.LOOM_BENCH_DBOS_DATABASE,
      'loom_bench_dbos',
    ),
  };
}

/**
 * What `bench:lease` runs unless LOOM_BENCH_LEASE_FULL=1: the full P9 sweep (3 backends × c
 * 16/64/256 × 2 shapes × 2 id styles × 3 modes × 5 repeats) takes ~20 minutes on 2 cores, while
 * the question it answers (does lazy cost anything against off?) needs one concurrency, one id
 * style (ids do not touch the lease path) and more repeats of smaller cells, so the paired
 * lazy ÷ off ratio gets enough pairs: ~3–5 minutes. Every backend and both shapes stay in, since
 * the goal differs per shape. A knob the user sets wins over these.
 */
export const leaseQuickDefaults = {
  LOOM_BENCH_CONCS: '64',
  LOOM_BENCH_IDS: 'caller',
  LOOM_BENCH_REPEATS: '8',
  LOOM_BENCH_EXECS: '5000',
  LOOM_BENCH_SQLITE_EXECS: '1024',
  LOOM_BENCH_PG_EXECS: '1024',
  LOOM_BENCH_IO_EXECS: '1024',
} as const satisfies Partial<Record<(typeof knobNames)[number], string>>;

/** The environment `bench:lease` reads its knobs from: `env` over the quick defaults, unless full. */
export function leaseEnv(env: Env): Env {
  if (readKnobs(env).leaseFull) return env;
  const set = Object.fromEntries(
    Object.entries(env).filter(([, value]) => nonEmpty(value) !== undefined),
  );
  return { ...leaseQuickDefaults, ...set };
}

/** Operations a cell runs: the requested count rounded up to a multiple of the concurrency. */
export function roundToConcurrency(requested: number, concurrency: number): number {
  return Math.max(concurrency, Math.ceil(requested / concurrency) * concurrency);
}

/**
 * What `bench:agents` runs unless a knob says otherwise: P6 fans out 20,000 runs on memory (the
 * workload PERFORMANCE.md names) and 2,000 on SQLite and Postgres (20,000 agent runs on a
 * durable store of a shared 2-core box take minutes per repeat), always with a quarter of them
 * in flight, so the ideal stays 4 waves × 2 calls × 50 ms = 400 ms.
 */
export const agentDefaults = {
  LOOM_BENCH_EXECS: '20000',
  LOOM_BENCH_SQLITE_EXECS: '2000',
  LOOM_BENCH_PG_EXECS: '2000',
} as const satisfies Partial<Record<(typeof knobNames)[number], string>>;

/** The environment `bench:agents` reads its knobs from: `env` over {@link agentDefaults}. */
export function agentEnv(env: Env): Env {
  return overDefaults(agentDefaults, env);
}

/**
 * What `bench:peers` runs unless a knob says otherwise: Postgres only (DBOS runs on nothing
 * else), c = 16 and 64, 1,024 executions per cell: 2 step counts × 2 concurrencies × 3 sides
 * × 5 repeats take ~2.5 minutes on a busy 2-core box, where DBOS ran 200–400 executions/s.
 */
export const peersDefaults = {
  LOOM_BENCH_BACKENDS: 'postgres',
  LOOM_BENCH_CONCS: '16,64',
  LOOM_BENCH_PG_EXECS: '1024',
} as const satisfies Partial<Record<(typeof knobNames)[number], string>>;

/** The environment `bench:peers` reads its knobs from: `env` over {@link peersDefaults}. */
export function peersEnv(env: Env): Env {
  return overDefaults(peersDefaults, env);
}

/** `env` over `defaults`, where a knob set to an empty string counts as unset. */
function overDefaults(defaults: Env, env: Env): Env {
  const set = Object.fromEntries(
    Object.entries(env).filter(([, value]) => nonEmpty(value) !== undefined),
  );
  return { ...defaults, ...set };
}

/** The scripts of this package that take `LOOM_BENCH_*` knobs. */
export type BenchScript = 'bench' | 'bench:lease' | 'bench:agents' | 'bench:peers';

/** The command that reproduces a run: the knobs that were set, then the pnpm script. */
export function commandLine(env: Env, script: BenchScript): string {
  const set = knobNames
    .filter((name) => nonEmpty(env[name]) !== undefined)
    .map((name) => `${name}=${env[name]}`);
  return [...set, `pnpm --filter @loom/bench-throughput ${script}`].join(' ');
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

function integer(
  name: string,
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
) {
  const text = nonEmpty(raw);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, got '${raw}'`);
  }
  return value;
}

function identifier(name: string, raw: string | undefined, fallback: string): string {
  const text = nonEmpty(raw);
  if (text === undefined) return fallback;
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(text)) {
    throw new Error(`${name} must be a lower-case Postgres identifier (a-z, 0-9, _), got '${raw}'`);
  }
  return text;
}

function integers(name: string, raw: string | undefined, min: number, max: number) {
  const text = nonEmpty(raw);
  if (text === undefined) return undefined;
  const values = text.split(',').map((part) => integer(name, part, Number.NaN, min, max));
  if (values.some((value) => Number.isNaN(value))) {
    throw new Error(`${name} must be a comma-separated list of integers, got '${raw}'`);
  }
  return [...new Set(values)].sort((a, b) => a - b);
}

function choices<T extends string>(name: string, raw: string | undefined, allowed: readonly T[]) {
  const text = nonEmpty(raw);
  if (text === undefined) return [...allowed];
  const picked = text
    .split(',')
    .map((part) => part.trim().toLowerCase())
    .filter((part) => part !== '');
  for (const part of picked) {
    if (!allowed.includes(part as T)) {
      throw new Error(`${name} accepts ${allowed.join(', ')} (comma-separated), got '${part}'`);
    }
  }
  if (picked.length === 0) throw new Error(`${name} names nothing: leave it unset for all`);
  // Keep the canonical order whatever order the user typed.
  return allowed.filter((choice) => picked.includes(choice));
}
