/**
 * Arms a timer: calls `fn` once after `ms` milliseconds; the returned function cancels it.
 * `@loom/middleware`'s own `SetTimer`, re-exported (one type, not a copy); inject one so tests
 * and simulation own time.
 */
export type { SetTimer } from '@loom/middleware';
