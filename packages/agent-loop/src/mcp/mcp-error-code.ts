import { LoomError } from '@loom/event-runtime';

/**
 * Stable error codes of `@loom/agent-loop/mcp`, carried by the one `LoomError` class. Callers match
 * on `code`. A failed MCP call inside a run is a `tool_error` observation whose text starts with
 * the code (`MCP_UNAVAILABLE: …`); it never crashes the process or the run.
 */
export const McpErrorCode = {
  /** A bad option of `mcpTools` (a name that is not one of the server's tools, a bad override). */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /**
   * No answer from the MCP server: the connection is closed or failed (the server process died,
   * the HTTP endpoint refuses), or the request timed out. For a call, its outcome is unknown:
   * the server may have done the work. `fields.tool`, `fields.mcpTool`; the SDK's error is the `cause`.
   */
  MCP_UNAVAILABLE: 'MCP_UNAVAILABLE',
  /**
   * The server answered with a JSON-RPC error (unknown tool, invalid params, an output that does
   * not match the tool's outputSchema): `fields.mcpCode` is the JSON-RPC error code.
   */
  MCP_REQUEST_FAILED: 'MCP_REQUEST_FAILED',
  /**
   * The tool ran and reported a failure (`isError: true`); the message is the result's text and
   * `fields.content` its content blocks.
   */
  MCP_TOOL_ERROR: 'MCP_TOOL_ERROR',
} as const;

/** One of the codes in {@link McpErrorCode}. */
export type McpErrorCode = (typeof McpErrorCode)[keyof typeof McpErrorCode];

/** @internal A LoomError with an MCP code (the kernel's one class, not a new one). */
export function mcpError(
  code: McpErrorCode,
  message: string,
  fields: Record<string, unknown>,
  cause?: unknown,
): LoomError<McpErrorCode> {
  return new LoomError<McpErrorCode>(code, message, fields, cause);
}
