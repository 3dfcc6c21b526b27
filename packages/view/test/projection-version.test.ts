// Projection tables of an older version (1: before schedules) on a real SQLite file and the real
// Postgres: readers treat them as not initialised (and the view reads the log), and
// `initProjections` drops and re-creates them at position 0, after which a catch-up refills them.
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { catchUpProjections, initProjections, openProjections, openView } from '../src/index.js';
import { parseDbUrl } from '../src/internal/db-url.js';
import { openProjectionDb } from '../src/projection/projection-db.js';
import { dbTargets } from './db-targets.js';
import { populate, runtimeOn } from './fixture.js';
import { tableNames } from './projection-support.js';

const { targets, cleanup } = dbTargets('view-projver');
afterAll(cleanup);

describe.each(targets)('projection tables of version 1 on $name', (target) => {
  it('are not initialised until initProjections rebuilds them', async () => {
    const backend = await target.open();
    const running = runtimeOn(backend);
    await populate(running, backend);
    await running.flows.shutdown();

    expect(await initProjections({ db: target.db })).toEqual({ created: true });
    const first = await catchUpProjections({ db: target.db });
    expect(first.applied).toBeGreaterThan(10);
    // Make them look like version 1: no schedules table, version 1 in the checkpoint.
    const writable = await openProjectionDb(parseDbUrl(target.db), false);
    const prefix = writable.schema === undefined ? '' : `"${writable.schema}".`;
    await sql.raw(`DROP TABLE ${prefix}loom_projection_schedules`).execute(writable.db);
    await writable.db.updateTable('loom_projection_checkpoints').set({ version: 1 }).execute();

    await expect(openProjections({ db: target.db })).rejects.toMatchObject({
      code: 'PROJECTIONS_NOT_INITIALIZED',
    });
    const view = await openView({ db: target.db });
    const fromLog = await view.runs({ limit: 100 });
    expect(fromLog.runs.map((r) => r.id)).toContain('order-7');
    await view.close();
    // Reading changed nothing.
    expect((await tableNames(writable)).includes('loom_projection_schedules')).toBe(false);

    expect(await initProjections({ db: target.db })).toEqual({ created: true });
    expect(await initProjections({ db: target.db })).toEqual({ created: false });
    const projections = await openProjections({ db: target.db });
    expect(await projections.checkpoint()).toEqual({ position: 0, events: 0 });
    await projections.close();
    const again = await catchUpProjections({ db: target.db });
    expect(again.applied).toBe(first.applied);
    const rebuilt = await openProjections({ db: target.db });
    expect((await rebuilt.runs({ limit: 100 })).runs.map((r) => r.id)).toEqual(
      fromLog.runs.map((r) => r.id),
    );
    await rebuilt.close();
    await writable.close();
  });
});
