export { McpErrorCode } from './mcp-error-code.js';
export { type McpCallToolResult, mcpResultText, mcpToolOutput } from './mcp-tool-output.js';
export {
  type McpClient,
  type McpToolOverride,
  type McpToolsOptions,
  mcpIdempotencyKeyMeta,
  mcpToolPagesMax,
  mcpTools,
} from './mcp-tools.js';
export { type McpToolAnnotations, sideEffectOfAnnotations } from './side-effect-of-annotations.js';
