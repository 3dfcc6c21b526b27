import type { LoomError } from '@loom/event-runtime';
import { McpErrorCode, mcpError } from '../mcp-error-code.js';

/** JSON-RPC codes the SDK uses for "no answer": the connection closed, the request timed out. */
const noAnswerCodes = new Set([-32000, -32001]);

/**
 * A failed MCP request as a LoomError: a JSON-RPC error the server sent is `MCP_REQUEST_FAILED`
 * (`fields.mcpCode`); anything else (closed connection, refused HTTP, timeout, a client that is
 * not connected) is `MCP_UNAVAILABLE`. The SDK's error is the `cause`.
 */
export function mcpFailure(
  error: unknown,
  doing: string,
  facts: Record<string, unknown>,
): LoomError<McpErrorCode> {
  const text = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  const isJsonRpc = error instanceof Error && error.name === 'McpError' && typeof code === 'number';
  if (isJsonRpc && !noAnswerCodes.has(code)) {
    return mcpError(
      McpErrorCode.MCP_REQUEST_FAILED,
      `${doing}: the server refused the request: ${text}`,
      { ...facts, mcpCode: code },
      error,
    );
  }
  return mcpError(
    McpErrorCode.MCP_UNAVAILABLE,
    `${doing}: no answer from the MCP server (${text}); check that it runs and is reachable, and reconnect the client. A call's outcome is unknown: the server may have done the work`,
    { ...facts, ...(typeof code === 'number' ? { mcpCode: code } : {}) },
    error,
  );
}
