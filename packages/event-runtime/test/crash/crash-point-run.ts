// Runs the crash-point enumeration on one backend: one worker incarnation per point, each dying
// at its point (SIGKILL, by its own hand) and the next finishing what it left before dying at
// the next point; a last one finishes the last. Then each point's executions are checked.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startWorker } from '../support/worker-process.js';
import { openCrashBackend } from './crash-backend.js';
import { crashPoints } from './crash-points.js';
import { crashStoreEnv, openInspector } from './kill-campaign.js';

const workerFile = join(import.meta.dirname, 'crash-point-worker.ts');
/** A worker that neither dies at its point nor ends by then is stuck: ended, and reported. */
const workerDeadlineMs = 90_000;
const terminalTypes = ['execution.completed', 'execution.failed', 'execution.cancelled'];

export interface PointOutcome {
  point: string;
  /** The worker died at the point (SIGKILL), after finishing the previous point's work. */
  died: boolean;
  /** What came out wrong; empty when the outcome is right. */
  wrong: string[];
  /** Plain effect runs beyond the first (each at most 1). */
  reruns: number;
  /** Its work had not ended 15 s into the next worker (which then went on to its own point). */
  stuck: boolean;
}

export async function runCrashPoints(
  backend: 'sqlite' | 'postgres',
  directory: string,
  pgUrl?: string,
  schema?: string,
  log?: (line: string) => void,
): Promise<PointOutcome[]> {
  mkdirSync(directory, { recursive: true });
  const effects = join(directory, 'effects.log');
  writeFileSync(effects, '');
  const storeEnv = crashStoreEnv(backend, directory, pgUrl, schema);
  await (await openCrashBackend({ ...storeEnv }, true)).close();
  const env = (point: string, previous: string, prefix: string) => ({
    ...storeEnv,
    LOOM_CRASH_PREPARED: '1',
    LOOM_CRASH_EFFECTS: effects,
    LOOM_POINT: point,
    LOOM_POINT_PREVIOUS: previous,
    LOOM_POINT_PREFIX: prefix,
  });
  const died: boolean[] = [];
  const stuck: boolean[] = [];
  let previous = '';
  for (const [index, point] of crashPoints.entries()) {
    const prefix = `p${index}`;
    const worker = startWorker(workerFile, env(point.name, previous, prefix));
    const deadline = setTimeout(() => worker.child.kill('SIGTERM'), workerDeadlineMs);
    const { signal, code } = await worker.exit;
    clearTimeout(deadline);
    const output = worker.output();
    log?.(`point ${index} (${point.name}): ${code ?? signal}`);
    if (signal === 'SIGTERM')
      throw new Error(
        `point ${index} (${point.name}): the worker hung for ${workerDeadlineMs} ms:\n${output}`,
      );
    if (!output.includes('previous-done\n'))
      throw new Error(
        `point ${index} (${point.name}): the worker did not finish ${previous} (${code ?? signal}):\n${output}`,
      );
    died.push(signal === 'SIGKILL' && !output.includes('survived\n'));
    if (index > 0) stuck.push(output.includes('previous-stuck\n'));
    previous = prefix;
  }
  const last = startWorker(workerFile, env('', previous, ''));
  const ended = await last.exit;
  if (ended.code !== 0)
    throw new Error(`the last worker failed (${ended.code ?? ended.signal}):\n${last.output()}`);

  const runs = new Map<string, number>();
  for (const line of readFileSync(effects, 'utf8').split('\n')) {
    if (line.length > 0) runs.set(line, (runs.get(line) ?? 0) + 1);
  }
  const inspector = openInspector(storeEnv);
  const side = await inspector.sideRows();
  const reader = await inspector.reader();
  const outcomes: PointOutcome[] = [];
  for (const [index, point] of crashPoints.entries()) {
    const prefix = `p${index}`;
    const wrong: string[] = [];
    let reruns = 0;
    const ended = async (execution: string, output: unknown) => {
      const id = `${prefix}-${execution}`;
      const events = await reader.read(id);
      const terminal = events.filter((event) => terminalTypes.includes(event.type));
      const started = events.filter((event) => event.type === 'execution.started').length;
      if (started !== 1) wrong.push(`${execution}: ${started} execution.started`);
      if (terminal.length !== 1) wrong.push(`${execution}: ${terminal.length} terminal events`);
      else if (
        terminal[0]?.type !== 'execution.completed' ||
        (terminal[0].payload as { output: unknown }).output !== output
      )
        wrong.push(`${execution}: ended ${JSON.stringify(terminal[0]?.payload)}`);
      const completed = events
        .filter((event) => event.type === 'step.completed')
        .map((event) => (event.payload as { index: number }).index);
      if (new Set(completed).size !== completed.length)
        wrong.push(`${execution}: a step completed twice`);
      if (!(await reader.verify(id)).ok) wrong.push(`${execution}: verify failed`);
      return events;
    };
    const parentEvents = await ended('parent', 'done 7');
    await ended('child', 2);
    await ended('receiver', 'hello');
    const childStarts = parentEvents.filter((event) => event.type === 'child.started').length;
    if (childStarts !== 1) wrong.push(`parent: ${childStarts} child.started`);
    const signals = await reader.readSignals(`${prefix}-receiver`);
    if (signals.length !== 1) wrong.push(`receiver: ${signals.length} signals in its inbox`);
    for (const key of ['parent/a', 'parent/notify', 'parent/b', 'child/c']) {
      const count = runs.get(`${prefix}-${key}`) ?? 0;
      if (count < 1 || count > 2) wrong.push(`${key}: effect ran ${count} times`);
      reruns += Math.max(0, count - 1);
    }
    const rows = side.get(`${prefix}-parent`) ?? 0;
    if (rows !== 1) wrong.push(`transaction: ${rows} side rows`);
    if (stuck[index] === true) wrong.push('its work had not ended 15 s into the next worker');
    outcomes.push({
      point: point.name,
      died: died[index] as boolean,
      wrong,
      reruns,
      stuck: stuck[index] as boolean,
    });
  }
  await reader.close();
  await inspector.close();
  return outcomes;
}
