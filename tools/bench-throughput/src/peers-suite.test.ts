import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropPostgres, type PgTarget, reachPostgres } from './bench-backend.js';
import { defaultPgUrl } from './knobs.js';
import {
  openPeerSides,
  type PeerCell,
  type PeerSides,
  pairedRatios,
  peersTable,
  peerVariants,
  runPeerCell,
} from './peers-suite.js';

const url = process.env.LOOM_BENCH_PG_URL || defaultPgUrl;
// DBOS is a process-wide singleton: one launch for the file, in a schema of its own (not a
// database: see DbosHome).
const dbosSchema = `h_peers_dbos_${process.pid}`;
let target: PgTarget;
let sides: PeerSides;

beforeAll(async () => {
  const reached = await reachPostgres(url);
  if (typeof reached === 'string') throw new Error(`Postgres at ${url}: ${reached}`);
  target = reached;
  sides = await openPeerSides(target, { schema: dbosSchema });
}, 60_000);

afterAll(async () => {
  await sides?.close();
  if (target !== undefined) await dropPostgres(target);
}, 60_000);

describe('bench:peers cells (counts, not times)', () => {
  // One test per step count (each side's cells of one count fit a test timeout); the second
  // checks what needs both counts.
  const cells: PeerCell[] = [];
  const recordedOf = (steps: 1 | 3) =>
    cells
      .filter((cell) => cell.steps === steps)
      .map((cell) => [cell.variant, cell.steps, cell.executions, cell.recorded]);
  const runCells = async (steps: 1 | 3) => {
    for (const variant of peerVariants) {
      const cell = await runPeerCell(sides, variant, {
        cellId: `t-${variant.replace(/\W/g, '')}-${steps}`,
        steps,
        concurrency: 4,
        executions: 24,
      });
      cells.push({ ...cell, repeat: 0 });
    }
  };

  it('each side completes every execution of a tiny 1-step cell, and its storage records them', async () => {
    await runCells(1);
    expect(recordedOf(1)).toEqual([
      ['Loom', 1, 24, '96 events'],
      ['Loom, coalesced 64', 1, 24, '96 events'],
      ['DBOS', 1, 24, '24 workflows, 24 step outputs'],
    ]);
  }, 60_000);

  it('each side completes every execution of a tiny 3-step cell; the two counts pair up in the table', async () => {
    await runCells(3);
    expect(recordedOf(3)).toEqual([
      ['Loom', 3, 24, '192 events'],
      ['Loom, coalesced 64', 3, 24, '192 events'],
      ['DBOS', 3, 24, '24 workflows, 72 step outputs'],
    ]);
    expect(pairedRatios(cells, 'Loom', 3, 4)).toHaveLength(1);
    expect(peersTable(cells, [4]).split('\n')).toHaveLength(2 + 6);
  }, 60_000);

  it("DBOS's tables are in a schema of the test database: the test made no database of its own", async () => {
    expect(sides.dbos.databaseUrl).toBe(target.url);
    const tables = await target.admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'workflow_status'`,
      [dbosSchema],
    );
    expect(tables.rows[0]?.n).toBe(1);
  });

  it('a DBOS cell checks its count in the system database: a rerun of used ids is refused', async () => {
    const spec = { cellId: 't-dbos-again', steps: 1 as const, concurrency: 2, executions: 4 };
    await runPeerCell(sides, 'DBOS', spec);
    // Two of the same ids again: DBOS hands back the recorded results, and the database holds
    // four workflows under the cell's prefix, not the two the cell ran.
    await expect(runPeerCell(sides, 'DBOS', { ...spec, executions: 2 })).rejects.toThrow(
      /recorded 4 successful workflows and 4 step outputs/,
    );
  }, 60_000);
});
