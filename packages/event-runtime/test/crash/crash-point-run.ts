// Runs the crash-point enumeration on one backend: one worker incarnation per point, each dying
// at its point (SIGKILL, by its own hand) and the next finishing what it left before dying at
// the next point; a last one finishes the last. Then each point's executions are checked.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnTestProcess } from '../../src/testing.js';
import { openCrashBackend } from './crash-backend.js';
import { crashPoints } from './crash-points.js';
import { crashStoreEnv, openInspector } from './kill-campaign.js';

const workerFile = join(import.meta.dirname, 'crash-point-worker.ts');
/** A worker that neither dies at its point nor ends by then is stuck: ended, and reported. */
const workerDeadlineMs = 45_000;
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

/**
 * The enumeration on one backend, one worker life per call: `prepare()`, then `point(i)` for
 * each point in order (its worker finishes the previous point's work, then dies at point i),
 * then `outcomes()` (a last worker finishes the last point's work, then every point is checked).
 * A test per call stays well inside a test timeout, and a hang names its point.
 */
export class CrashPointRun {
  private readonly effects: string;
  private readonly storeEnv: Record<string, string>;
  private readonly died: boolean[] = [];
  private readonly stuck: boolean[] = [];
  private previous = '';

  constructor(
    backend: 'sqlite' | 'postgres',
    directory: string,
    pgUrl?: string,
    schema?: string,
    private readonly log?: (line: string) => void,
  ) {
    mkdirSync(directory, { recursive: true });
    this.effects = join(directory, 'effects.log');
    this.storeEnv = crashStoreEnv(backend, directory, pgUrl, schema);
  }

  /** Creates the store's schema and an empty effects file. */
  async prepare(): Promise<void> {
    writeFileSync(this.effects, '');
    await (await openCrashBackend({ ...this.storeEnv }, true)).close();
  }

  private env(point: string, prefix: string): Record<string, string> {
    return {
      ...this.storeEnv,
      LOOM_CRASH_PREPARED: '1',
      LOOM_CRASH_EFFECTS: this.effects,
      LOOM_POINT: point,
      LOOM_POINT_PREVIOUS: this.previous,
      LOOM_POINT_PREFIX: prefix,
    };
  }

  /**
   * The worker of point `index` (points go in order): it finishes the previous point's work,
   * then dies at its point. True when it died there (SIGKILL by its own hand). Throws when it
   * hung past `workerDeadlineMs` or did not finish the previous point's work.
   */
  async point(index: number): Promise<boolean> {
    const point = crashPoints[index];
    if (point === undefined || index !== this.died.length) {
      throw new Error(`crash points run in order: point ${index} asked after ${this.died.length}`);
    }
    const prefix = `p${index}`;
    const worker = spawnTestProcess(workerFile, { env: this.env(point.name, prefix) });
    const previous = this.previous;
    // Whatever this worker did, the next one finishes this point's work.
    this.previous = prefix;
    this.died.push(false);
    const deadline = setTimeout(() => worker.child.kill('SIGTERM'), workerDeadlineMs);
    const { signal, code } = await worker.exit;
    clearTimeout(deadline);
    const output = worker.output();
    this.log?.(`point ${index} (${point.name}): ${code ?? signal}`);
    if (index > 0) this.stuck[index - 1] = output.includes('previous-stuck\n');
    if (signal === 'SIGTERM')
      throw new Error(
        `point ${index} (${point.name}): the worker hung for ${workerDeadlineMs} ms:\n${output}`,
      );
    if (!output.includes('previous-done\n'))
      throw new Error(
        `point ${index} (${point.name}): the worker did not finish ${previous || 'nothing'} (${code ?? signal}):\n${output}`,
      );
    const died = signal === 'SIGKILL' && !output.includes('survived\n');
    this.died[index] = died;
    return died;
  }

  /** A last worker finishes the last point's work; then each point's executions are checked. */
  async outcomes(): Promise<PointOutcome[]> {
    const last = spawnTestProcess(workerFile, { env: this.env('', '') });
    const deadline = setTimeout(() => last.child.kill('SIGTERM'), workerDeadlineMs);
    const ended = await last.exit;
    clearTimeout(deadline);
    if (ended.code !== 0)
      throw new Error(`the last worker failed (${ended.code ?? ended.signal}):\n${last.output()}`);
    const runs = new Map<string, number>();
    for (const line of readFileSync(this.effects, 'utf8').split('\n')) {
      if (line.length > 0) runs.set(line, (runs.get(line) ?? 0) + 1);
    }
    const inspector = openInspector(this.storeEnv);
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
      if (this.stuck[index] === true)
        wrong.push('its work had not ended 15 s into the next worker');
      outcomes.push({
        point: point.name,
        died: this.died[index] as boolean,
        wrong,
        reruns,
        stuck: this.stuck[index] as boolean,
      });
    }
    await reader.close();
    await inspector.close();
    return outcomes;
  }
}

/** The whole enumeration on one backend in one call (the crash:points command). */
export async function runCrashPoints(
  backend: 'sqlite' | 'postgres',
  directory: string,
  pgUrl?: string,
  schema?: string,
  log?: (line: string) => void,
): Promise<PointOutcome[]> {
  const run = new CrashPointRun(backend, directory, pgUrl, schema, log);
  await run.prepare();
  for (let index = 0; index < crashPoints.length; index++) await run.point(index);
  return run.outcomes();
}
