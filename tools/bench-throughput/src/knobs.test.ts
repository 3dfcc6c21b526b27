import { describe, expect, it } from 'vitest';
import {
  commandLine,
  defaultPgUrl,
  leaseEnv,
  leaseQuickDefaults,
  peersEnv,
  readKnobs,
  roundToConcurrency,
} from './knobs.js';

describe('knobs', () => {
  it('defaults: all backends, shapes and id styles, 5 repeats, 20 ms I/O, the local Postgres', () => {
    const knobs = readKnobs({});
    expect(knobs.pgUrl).toBe(defaultPgUrl);
    expect(knobs.backends).toEqual(['memory', 'sqlite', 'postgres']);
    expect(knobs.concs).toBeUndefined();
    expect(knobs.repeats).toBe(5);
    expect(knobs.ioMs).toBe(20);
    expect(knobs.shapes).toEqual(['noop', 'io']);
    expect(knobs.ids).toEqual(['caller', 'minted']);
    expect(knobs.batches).toBeUndefined();
    expect(knobs.sections).toEqual(['p1', 'p3', 'p8', 'p11']);
  });

  it('parses lists, keeps the canonical order and drops duplicates', () => {
    const knobs = readKnobs({
      LOOM_BENCH_BACKENDS: 'postgres, sqlite',
      LOOM_BENCH_CONCS: '64,16,64',
      LOOM_BENCH_SHAPES: 'io',
      LOOM_BENCH_IDS: 'MINTED',
      LOOM_BENCH_BATCHES: '1,16,64',
    });
    expect(knobs.backends).toEqual(['sqlite', 'postgres']);
    expect(knobs.concs).toEqual([16, 64]);
    expect(knobs.shapes).toEqual(['io']);
    expect(knobs.ids).toEqual(['minted']);
    expect(knobs.batches).toEqual([1, 16, 64]);
  });

  it('per-backend execution counts fall back to their own defaults, not to EXECS', () => {
    const knobs = readKnobs({ LOOM_BENCH_EXECS: '500', LOOM_BENCH_PG_EXECS: '900' });
    expect(knobs.execs).toBe(500);
    expect(knobs.pgExecs).toBe(900);
    expect(knobs.sqliteExecs).toBe(1_500);
  });

  it('refuses bad values, naming the knob', () => {
    expect(() => readKnobs({ LOOM_BENCH_BACKENDS: 'mysql' })).toThrow(/LOOM_BENCH_BACKENDS/);
    expect(() => readKnobs({ LOOM_BENCH_REPEATS: '0' })).toThrow(/LOOM_BENCH_REPEATS/);
    expect(() => readKnobs({ LOOM_BENCH_REPEATS: '2.5' })).toThrow(/LOOM_BENCH_REPEATS/);
    expect(() => readKnobs({ LOOM_BENCH_CONCS: '16,,64' })).toThrow(/LOOM_BENCH_CONCS/);
    expect(() => readKnobs({ LOOM_BENCH_EXECS: '-5' })).toThrow(/LOOM_BENCH_EXECS/);
    expect(() => readKnobs({ LOOM_BENCH_SECTIONS: 'p2' })).toThrow(/LOOM_BENCH_SECTIONS/);
  });

  it('treats empty knobs as unset', () => {
    expect(readKnobs({ LOOM_BENCH_BACKENDS: ' ', LOOM_BENCH_REPEATS: '' }).repeats).toBe(5);
  });

  it('rounds a cell up to a whole number of rounds at its concurrency', () => {
    expect(roundToConcurrency(2000, 256)).toBe(2048);
    expect(roundToConcurrency(2000, 16)).toBe(2000);
    expect(roundToConcurrency(10, 64)).toBe(64);
  });

  it('prints the command with exactly the knobs that were set', () => {
    expect(commandLine({ LOOM_BENCH_REPEATS: '7', HOME: '/root' }, 'bench:lease')).toBe(
      'LOOM_BENCH_REPEATS=7 pnpm --filter @loom/bench-throughput bench:lease',
    );
    expect(commandLine({}, 'bench')).toBe('pnpm --filter @loom/bench-throughput bench');
  });

  it('bench:lease defaults to the quick subset; knobs the user sets win; FULL=1 is the sweep', () => {
    const quick = readKnobs(leaseEnv({}));
    expect(quick.leaseFull).toBe(false);
    expect(quick.concs).toEqual([64]);
    expect(quick.ids).toEqual(['caller']);
    expect(quick.backends).toEqual(['memory', 'sqlite', 'postgres']);
    expect(quick.shapes).toEqual(['noop', 'io']);
    expect(quick.repeats).toBe(Number(leaseQuickDefaults.LOOM_BENCH_REPEATS));
    const mine = readKnobs(leaseEnv({ LOOM_BENCH_CONCS: '16,256', LOOM_BENCH_REPEATS: ' ' }));
    expect(mine.concs).toEqual([16, 256]);
    expect(mine.repeats).toBe(Number(leaseQuickDefaults.LOOM_BENCH_REPEATS));
    const full = readKnobs(leaseEnv({ LOOM_BENCH_LEASE_FULL: '1' }));
    expect(full.leaseFull).toBe(true);
    expect(full.concs).toBeUndefined();
    expect(full.ids).toEqual(['caller', 'minted']);
    expect(full.repeats).toBe(5);
    expect(() => leaseEnv({ LOOM_BENCH_LEASE_FULL: 'yes' })).toThrow(/LOOM_BENCH_LEASE_FULL/);
    expect(commandLine({ LOOM_BENCH_LEASE_FULL: '1' }, 'bench:lease')).toBe(
      'LOOM_BENCH_LEASE_FULL=1 pnpm --filter @loom/bench-throughput bench:lease',
    );
  });

  it('bench:peers defaults to Postgres at c = 16 and 64 with its own DBOS database; knobs the user sets win', () => {
    const peers = readKnobs(peersEnv({}));
    expect(peers.backends).toEqual(['postgres']);
    expect(peers.concs).toEqual([16, 64]);
    expect(peers.pgExecs).toBe(1024);
    expect(peers.repeats).toBe(5);
    expect(peers.dbosDatabase).toBe('loom_bench_dbos');
    const mine = readKnobs(peersEnv({ LOOM_BENCH_CONCS: '8', LOOM_BENCH_DBOS_DATABASE: 'mine_1' }));
    expect(mine.concs).toEqual([8]);
    expect(mine.dbosDatabase).toBe('mine_1');
    expect(() => readKnobs({ LOOM_BENCH_DBOS_DATABASE: 'x; DROP DATABASE test' })).toThrow(
      /LOOM_BENCH_DBOS_DATABASE/,
    );
    expect(commandLine({ LOOM_BENCH_DBOS_DATABASE: 'mine_1' }, 'bench:peers')).toBe(
      'LOOM_BENCH_DBOS_DATABASE=mine_1 pnpm --filter @loom/bench-throughput bench:peers',
    );
  });
});
