import type { SideEffect } from '../side-effect.js';

/** The hints of an MCP tool's `annotations` that decide its default side-effect class. */
export interface McpToolAnnotations {
  readonly readOnlyHint?: boolean | undefined;
  readonly destructiveHint?: boolean | undefined;
  readonly idempotentHint?: boolean | undefined;
  readonly openWorldHint?: boolean | undefined;
  readonly title?: string | undefined;
}

/**
 * The side-effect class an MCP tool gets when no override names one. Only a hint set to `true`
 * counts, in this order:
 *
 * - `readOnlyHint` → `read_only`
 * - `destructiveHint` → `destructive` (before `idempotentHint`: a tool that deletes is denied by
 *   the default policy even when deleting twice is deleting once)
 * - `idempotentHint` → `idempotent`
 * - anything else, no annotations included → `remote_mutation` (the default policy asks a
 *   person; after a crash mid-call the run waits for an operator instead of calling it again)
 *
 * The MCP spec reads an absent `destructiveHint` as "may be destructive"; here an absent hint
 * is `remote_mutation`, which already needs approval and is never re-run by itself. Hints are the
 * server's claims, so they only give the default: override a tool's class in `mcpTools`.
 *
 * @example
 * sideEffectOfAnnotations({ readOnlyHint: true }); // 'read_only'
 * sideEffectOfAnnotations(undefined);              // 'remote_mutation'
 */
export function sideEffectOfAnnotations(annotations: McpToolAnnotations | undefined): SideEffect {
  if (annotations?.readOnlyHint === true) return 'read_only';
  if (annotations?.destructiveHint === true) return 'destructive';
  if (annotations?.idempotentHint === true) return 'idempotent';
  return 'remote_mutation';
}
