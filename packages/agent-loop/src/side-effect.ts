/**
 * What calling a tool does to the world, declared by the tool. It decides the default policy
 * and what happens after a crash mid-call:
 *
 * - `read_only`: reads only; safe to repeat.
 * - `idempotent`: changes the world, but calling it twice with the same input is calling it once.
 * - `local_mutation`: changes something of this process's own (a scratch file, a cache).
 * - `remote_mutation`: changes the world outside (sends a mail, books, charges).
 * - `destructive`: deletes or cannot be undone.
 *
 * After a crash, a `read_only` or `idempotent` tool whose outcome is unknown runs again; any
 * other class pauses the run on an `interrupted_side_effect` approval.
 */
export type SideEffect =
  | 'read_only'
  | 'idempotent'
  | 'local_mutation'
  | 'remote_mutation'
  | 'destructive';

/** Every side-effect class, least to most dangerous. */
export const sideEffects: readonly SideEffect[] = Object.freeze([
  'read_only',
  'idempotent',
  'local_mutation',
  'remote_mutation',
  'destructive',
]);

/** True for the classes that may run again when a crash left their outcome unknown. */
export function isRerunnable(sideEffect: SideEffect): boolean {
  return sideEffect === 'read_only' || sideEffect === 'idempotent';
}
