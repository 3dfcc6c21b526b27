// The flows of the singleton process tests (ADR 0059): one unfinished run per account. Each run
// enters and exits through tenant-flow.ts's recorder (the account as the tenant), so
// flowctl_running tells the test which worker holds it and flowctl_seen how many runs of the
// account were in flight as it entered.
import type { PostgresBackend } from '@loom/event-runtime/postgres';
import type { SqliteBackend } from '@loom/event-runtime/sqlite';
import { defineFlow } from '../../src/index.js';
import { recorderOf, type TenantInput } from './tenant-flow.js';

export const singletonQueue = 'singletons';
export const cancelQueue = 'replaced';

export function singletonFlow(backend: SqliteBackend | PostgresBackend | undefined) {
  const recorder = backend === undefined ? undefined : recorderOf(backend);
  return defineFlow(
    {
      name: 'singleton-job',
      singleton: { key: (input: TenantInput) => input.tenant, mode: 'skip' },
    },
    async (ctx, input) => {
      await ctx.step('enter', () => recorder?.enter(input, process.pid));
      await ctx.step('work', () => new Promise<void>((resolve) => setTimeout(resolve, 1_500)));
      await ctx.step('exit', () => recorder?.exit(input, process.pid));
      return input.id;
    },
  );
}

/** A cancel-mode run's input: `workMs` is how long its work step takes (default 1.5 s). */
export interface CancelInput extends TenantInput {
  workMs?: number;
}

/**
 * The flow of the singleton `mode: 'cancel'` process test: a newer start of an account replaces
 * the unfinished one. Each run enters and exits through the recorder, so flowctl_running tells the
 * test which worker holds it and flowctl_done which runs finished. `version` makes the same flow
 * of a later release (the key is shared across versions).
 */
export function cancelSingletonFlow(
  backend: SqliteBackend | PostgresBackend | undefined,
  version?: string,
) {
  const recorder = backend === undefined ? undefined : recorderOf(backend);
  return defineFlow(
    {
      name: 'singleton-cancel-job',
      ...(version === undefined ? {} : { version }),
      singleton: { key: (input: CancelInput) => input.tenant, mode: 'cancel' },
    },
    async (ctx, input: CancelInput) => {
      await ctx.step('enter', () => recorder?.enter(input, process.pid));
      await ctx.step(
        'work',
        () => new Promise<void>((resolve) => setTimeout(resolve, input.workMs ?? 1_500)),
      );
      await ctx.step('exit', () => recorder?.exit(input, process.pid));
      return input.id;
    },
  );
}
