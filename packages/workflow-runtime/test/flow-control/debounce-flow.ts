// The flow of the debounce process test (ADR 0059): enqueues of one tenant collapse into one run
// while none has started, which runs with the last input. Each run enters and exits through
// tenant-flow.ts's recorder (its input's id as the item), so flowctl_seen lists every input that
// ran and flowctl_running which worker holds a run.
import type { PostgresBackend } from '@loom/event-runtime/postgres';
import type { SqliteBackend } from '@loom/event-runtime/sqlite';
import { defineFlow } from '../../src/index.js';
import { recorderOf, type TenantInput } from './tenant-flow.js';

export const debounceQueue = 'debounced';
// Long beside one enqueue (a few ms), so a burst is never split by its own period on a busy box.
export const debouncePeriodMs = 500;

export function debounceFlow(backend: SqliteBackend | PostgresBackend | undefined) {
  const recorder = backend === undefined ? undefined : recorderOf(backend);
  return defineFlow(
    {
      name: 'debounce-job',
      debounce: { key: (input: TenantInput) => input.tenant, periodMs: debouncePeriodMs },
    },
    async (ctx, input) => {
      await ctx.step('enter', () => recorder?.enter(input, process.pid));
      await ctx.step('work', () => new Promise<void>((resolve) => setTimeout(resolve, 800)));
      await ctx.step('exit', () => recorder?.exit(input, process.pid));
      return input.id;
    },
  );
}
