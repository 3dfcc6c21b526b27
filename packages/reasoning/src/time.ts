/**
 * Arms a timer: calls `fn` once after `ms` milliseconds; the returned function cancels it.
 * Structurally `@loom/middleware`'s `SetTimer`; inject one so tests and simulation own time.
 */
export type SetTimer = (fn: () => void, ms: number) => () => void;
