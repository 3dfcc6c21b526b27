// Spawns lives of kill-worker.ts and reads what they did. Shared by the SQLite and Postgres
// kill matrices.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StoredEvent } from '@loom/event-runtime';
import { spawnTestProcess } from '@loom/event-runtime/testing';

const worker = join(import.meta.dirname, 'kill-worker.ts');
const lifeTimeoutMs = 25_000;

export interface Life {
  /** 'SIGKILL' when the worker killed itself, else null. */
  signal: NodeJS.Signals | null;
  code: number | null;
  /** `result` or `approval`, with its JSON. */
  line: { kind: 'result' | 'approval'; value: Record<string, unknown> } | undefined;
  output: string;
}

/** A life of the worker that the test may kill itself: `ended` settles once it exited or died. */
export interface RunningLife {
  /** SIGKILLs the worker (it may be dead already). */
  kill(): void;
  ended: Promise<Life>;
}

/** Starts one life of the worker (kill-worker.ts unless `script`); it is killed at its deadline. */
export function spawnLife(env: Record<string, string>, script = worker): RunningLife {
  const child = spawnTestProcess(script, { env, deadlineMs: lifeTimeoutMs + 5_000 });
  const ended = child.ended(lifeTimeoutMs).then(({ code, signal, output }): Life => {
    const match = /^(result|approval) (.*)$/m.exec(output);
    return {
      code,
      signal,
      output,
      line:
        match === null
          ? undefined
          : { kind: match[1] as 'result' | 'approval', value: JSON.parse(match[2] as string) },
    };
  });
  return { kill: () => child.child.kill('SIGKILL'), ended };
}

/** Runs one life of the worker (kill-worker.ts unless `script`) to its end (exit or SIGKILL), within a deadline. */
export function life(env: Record<string, string>, script = worker): Promise<Life> {
  return spawnLife(env, script).ended;
}

/**
 * Opens the log a worker writes (`KILL_BACKEND` and its settings in `env`) from the test's own
 * process, to watch what is durable while a worker lives. SQLite opens read-only.
 */
export async function openLog(
  env: Record<string, string>,
): Promise<{ read(runId: string): Promise<StoredEvent[]>; close(): Promise<void> }> {
  if (env.KILL_BACKEND === 'postgres') {
    const { PostgresEventStore } = await import('@loom/event-runtime/postgres');
    const store = await PostgresEventStore.open({
      connectionString: env.KILL_PG_URL as string,
      schema: env.KILL_SCHEMA as string,
    });
    return { read: (runId) => store.read(runId), close: () => store.close() };
  }
  const { SqliteEventStore } = await import('@loom/event-runtime/sqlite');
  const store = SqliteEventStore.open({ path: env.KILL_DB as string, readOnly: true });
  return { read: (runId) => store.read(runId), close: () => store.close() };
}

/** The lines of the side-channel file: one idempotency key per call of the tool. */
export function callsIn(file: string): string[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '');
}

/** How many times the tool was called: lines in the side-channel file. */
export function invocationsIn(file: string): number {
  return callsIn(file).length;
}

/** The names of the steps `events` completed that `match` accepts, in log order. */
export function completedSteps(
  events: readonly StoredEvent[],
  match: (stepName: string) => boolean,
): string[] {
  return events.flatMap((event) => {
    const stepName = (event.payload as { name?: unknown }).name;
    return event.type === 'step.completed' && typeof stepName === 'string' && match(stepName)
      ? [stepName]
      : [];
  });
}
