import type { JsonValue } from '@loom/event-runtime';

/** The parts of an MCP `CallToolResult` this package reads. */
export interface McpCallToolResult {
  readonly content?: readonly unknown[] | undefined;
  readonly structuredContent?: Record<string, unknown> | undefined;
  readonly isError?: boolean | undefined;
}

interface TextBlock {
  readonly type: 'text';
  readonly text: string;
}

function isTextBlock(block: unknown): block is TextBlock {
  return (
    typeof block === 'object' &&
    block !== null &&
    (block as { type?: unknown }).type === 'text' &&
    typeof (block as { text?: unknown }).text === 'string'
  );
}

/** The result as JSON the log can hold: what the SDK parsed from the wire, without `undefined`s. */
function asJson(value: unknown): JsonValue {
  return JSON.parse(JSON.stringify(value)) as JsonValue;
}

/**
 * The output a successful MCP tool call becomes (what the run records and the model sees):
 *
 * - the result's `structuredContent`, when the server sent one (tools with an `outputSchema`);
 * - else, when every content block is text, their texts joined with `\n` (a string);
 * - else the content blocks as they came (`[{ type: 'image', data, mimeType }, …]`);
 * - `null` for a result with no content at all.
 *
 * A result with `isError: true` is not an output: the tool throws `MCP_TOOL_ERROR` with
 * {@link mcpResultText} as its message, and the model sees a `tool_error`.
 *
 * @example
 * mcpToolOutput({ content: [{ type: 'text', text: '21°C' }] }); // '21°C'
 */
export function mcpToolOutput(result: McpCallToolResult): JsonValue {
  if (result.structuredContent !== undefined) return asJson(result.structuredContent);
  const content = result.content ?? [];
  if (content.length === 0) return null;
  if (content.every(isTextBlock)) return content.map((block) => block.text).join('\n');
  return asJson(content);
}

/** The text blocks of a result, joined with `\n` (empty when it has none). */
export function mcpResultText(result: McpCallToolResult): string {
  return (result.content ?? [])
    .filter(isTextBlock)
    .map((block) => block.text)
    .join('\n');
}
