// `loom fork <id> --at <sequence>` from the built binary, on a SQLite file and Postgres: the fork
// is a new run whose log is the original's up to the cut; a runtime running the flow picks it up
// (its recovery round) and runs the steps after the cut again, once; the original is untouched.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StoredEvent } from '@loom/event-runtime';
import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { dbTargets } from './db-targets.js';
import { loom } from './fixture.js';

const { dir, targets, cleanup } = dbTargets('view-fork');
afterAll(cleanup);

describe.each(targets)('loom fork on $name', (target) => {
  const env = { LOOM_DB: target.db };
  const sideChannel = join(dir, `${target.name}.steps`);
  const ran = () =>
    existsSync(sideChannel) ? readFileSync(sideChannel, 'utf8').trim().split('\n') : [];
  const pipeline = defineFlow({ name: 'pipeline' }, async (ctx, input: { n: number }) => {
    let value = input.n;
    for (const name of ['a', 'b', 'c']) {
      value = await ctx.step(name, () => {
        appendFileSync(sideChannel, `${ctx.executionId} ${name}\n`);
        return value + 1;
      });
    }
    return value;
  });

  it('forks after step a: the fork runs b and c again, once, and ends like the original', async () => {
    const first = createRuntime({ backend: await target.open(), flows: [pipeline] });
    try {
      expect(await (await first.start(pipeline, { n: 1 }, { executionId: 'p-1' })).result()).toBe(
        4,
      );
    } finally {
      await first.shutdown();
    }
    const original = JSON.parse(
      (await loom(['events', 'p-1', '--json'], env)).stdout,
    ) as StoredEvent[];
    const cut = original.find(
      (e) => e.type === 'step.completed' && (e.payload as { name: string }).name === 'a',
    ) as StoredEvent;

    const forked = await loom(
      ['fork', 'p-1', '--at', String(cut.sequence), '--by', 'ana', '--json'],
      env,
    );
    expect(forked.stderr).toBe('');
    expect(forked.code).toBe(0);
    const forkId = `fork-${cut.sequence}-of-p-1`;
    expect(JSON.parse(forked.stdout)).toEqual({
      executionId: forkId,
      forkedFrom: 'p-1',
      atSequence: cut.sequence,
    });
    const copied = JSON.parse(
      (await loom(['events', forkId, '--json'], env)).stdout,
    ) as StoredEvent[];
    expect(copied).toHaveLength(cut.sequence + 1);
    expect(copied[0]?.payload).toMatchObject({
      flow: 'pipeline',
      input: { n: 1 },
      forkedFrom: { executionId: 'p-1', sequence: cut.sequence, by: 'ana' },
    });
    expect(copied.slice(1).map((e) => [e.type, e.payload])).toEqual(
      original.slice(1, cut.sequence + 1).map((e) => [e.type, e.payload]),
    );

    // A runtime running the flow: its boot recovery round finds the fork and drives it.
    const second = createRuntime({ backend: await target.open(), flows: [pipeline] });
    try {
      expect(await second.attach<number>(forkId).result()).toBe(4);
    } finally {
      await second.shutdown();
    }
    expect(ran().filter((line) => line.startsWith(forkId))).toEqual([`${forkId} b`, `${forkId} c`]);
    expect(ran().filter((line) => line.startsWith('p-1 '))).toEqual(['p-1 a', 'p-1 b', 'p-1 c']);
    const after = JSON.parse((await loom(['events', 'p-1', '--json'], env)).stdout);
    expect(after).toEqual(original);
    expect((await loom(['verify', forkId], env)).code).toBe(0);
  });

  it('refuses a cut at the ending, an unknown run and an id that exists', async () => {
    const events = JSON.parse(
      (await loom(['events', 'p-1', '--json'], env)).stdout,
    ) as StoredEvent[];
    const ending = await loom(['fork', 'p-1', '--at', String(events.length - 1)], env);
    expect(ending.code).toBe(2);
    expect(ending.stderr).toContain(`a sequence before its ending: 0 to ${events.length - 2}`);
    const unknown = await loom(['fork', 'nope', '--at', '1'], env);
    expect(unknown.code).toBe(3);
    const again = await loom(['fork', 'p-1', '--at', '1', '--id', 'p-1'], env);
    expect(again.code).toBe(4);
    expect(again.stderr).toContain('EXECUTION_ALREADY_STARTED');
  });
});
