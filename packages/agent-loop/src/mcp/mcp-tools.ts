import type { JsonValue } from '@loom/event-runtime';
import type { JsonSchema } from '@loom/reasoning';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { defineTool, type Tool, type ToolContext, toolTimeoutMsDefault } from '../define-tool.js';
import { isLoomError } from '../errors.js';
import type { SideEffect } from '../side-effect.js';
import { mcpFailure } from './internal/mcp-failure.js';
import { McpErrorCode, mcpError } from './mcp-error-code.js';
import { type McpCallToolResult, mcpResultText, mcpToolOutput } from './mcp-tool-output.js';
import { sideEffectOfAnnotations } from './side-effect-of-annotations.js';

/** `listTools` pages read before giving up: a server that keeps paging is broken, not big. */
export const mcpToolPagesMax = 100;

/**
 * The `_meta` key of every `tools/call` request that carries the call's idempotency key
 * (`<runId>/<turn>.<call>`, stable across re-runs), so a server can deduplicate.
 */
export const mcpIdempotencyKeyMeta = 'loom.dev/idempotency-key';

/** What `mcpTools` needs of an MCP client: a connected `Client` of `@modelcontextprotocol/sdk`. */
export type McpClient = Pick<Client, 'listTools' | 'callTool'>;

/** Per-tool changes, keyed by the tool's name on the MCP server. */
export interface McpToolOverride {
  /** The class to use instead of the one the annotations suggest. */
  sideEffect?: SideEffect;
  /** The name the model sees (before `prefix`), e.g. for a server name with a `.` in it. */
  name?: string;
  /** The description the model sees instead of the server's. */
  description?: string;
  /** This tool's timeout. */
  timeoutMs?: number;
}

/** What `mcpTools` takes besides the client. */
export interface McpToolsOptions {
  /** Per-tool overrides, keyed by the MCP tool name. */
  overrides?: Readonly<Record<string, McpToolOverride>>;
  /** Only these MCP tools (by MCP name). Default: all of them. */
  include?: readonly string[];
  /** Not these MCP tools (by MCP name). */
  exclude?: readonly string[];
  /** Put in front of every name the model sees (`github_`), to keep servers apart. */
  prefix?: string;
  /** Every tool's timeout unless overridden; default {@link toolTimeoutMsDefault}. */
  timeoutMs?: number;
}

interface ListedTool {
  readonly name: string;
  readonly title?: string | undefined;
  readonly description?: string | undefined;
  readonly inputSchema: Record<string, unknown>;
  readonly annotations?: Parameters<typeof sideEffectOfAnnotations>[0];
}

async function listAll(client: McpClient): Promise<ListedTool[]> {
  const tools: ListedTool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < mcpToolPagesMax; page++) {
    let answer: Awaited<ReturnType<McpClient['listTools']>>;
    try {
      answer = await client.listTools(cursor === undefined ? undefined : { cursor });
    } catch (error) {
      throw mcpFailure(error, 'listing the tools of the MCP server', {});
    }
    tools.push(...answer.tools);
    if (answer.nextCursor === undefined) return tools;
    cursor = answer.nextCursor;
  }
  throw mcpError(
    McpErrorCode.MCP_REQUEST_FAILED,
    `the MCP server's tool list did not end within ${mcpToolPagesMax} pages: the server keeps returning a nextCursor`,
    { limit: 'mcpToolPagesMax' },
  );
}

function checkNames(kind: string, names: readonly string[] | undefined, known: Set<string>): void {
  for (const name of names ?? []) {
    if (!known.has(name)) {
      throw mcpError(
        McpErrorCode.INVALID_ARGUMENT,
        `mcpTools: ${kind} names '${name}', which is not a tool of this MCP server (it has: ${[...known].join(', ')})`,
        { path: kind, actual: name },
      );
    }
  }
}

function toLoomTool(client: McpClient, listed: ListedTool, options: McpToolsOptions): Tool {
  const override = options.overrides?.[listed.name] ?? {};
  const name = `${options.prefix ?? ''}${override.name ?? listed.name}`;
  const timeoutMs = override.timeoutMs ?? options.timeoutMs ?? toolTimeoutMsDefault;
  const run = async (input: JsonValue, context: ToolContext): Promise<JsonValue> => {
    const facts = { tool: name, mcpTool: listed.name, idempotencyKey: context.idempotencyKey };
    let result: McpCallToolResult;
    try {
      result = (await client.callTool(
        {
          name: listed.name,
          arguments: input as Record<string, unknown>,
          _meta: { [mcpIdempotencyKeyMeta]: context.idempotencyKey },
        },
        undefined,
        // The step's timeout aborts `signal`; the SDK's own timer must not cut the call shorter.
        { signal: context.signal, timeout: timeoutMs },
      )) as McpCallToolResult;
    } catch (error) {
      // Cancel and the step's timeout are the run's business: let its reason through.
      if (context.signal.aborted) throw error;
      throw mcpFailure(error, `calling MCP tool '${listed.name}'`, facts);
    }
    if (!Array.isArray(result.content)) {
      throw mcpError(
        McpErrorCode.MCP_REQUEST_FAILED,
        `MCP tool '${listed.name}' answered in the pre-2024-11-05 'toolResult' form, which this client does not read; upgrade the server's MCP SDK`,
        facts,
      );
    }
    if (result.isError === true) {
      const text = mcpResultText(result);
      throw mcpError(
        McpErrorCode.MCP_TOOL_ERROR,
        text === '' ? `MCP tool '${listed.name}' reported an error without text` : text,
        { ...facts, content: JSON.parse(JSON.stringify(result.content)) },
      );
    }
    return mcpToolOutput(result);
  };
  try {
    return defineTool({
      name,
      description: override.description ?? listed.description ?? listed.title ?? '',
      input: listed.inputSchema as JsonSchema,
      sideEffect: override.sideEffect ?? sideEffectOfAnnotations(listed.annotations),
      timeoutMs,
      run,
    });
  } catch (error) {
    if (!isLoomError(error, 'INVALID_ARGUMENT')) throw error;
    throw mcpError(
      McpErrorCode.INVALID_ARGUMENT,
      `MCP tool '${listed.name}': ${error.message} (rename it with overrides: { '${listed.name}': { name } }, fix the override, or exclude it)`,
      { ...error.fields, mcpTool: listed.name },
      error,
    );
  }
}

/**
 * Turns the tools of a Model Context Protocol server into Loom tools. Each tool's `inputSchema`
 * (JSON Schema) is what the model sees and what validates the model's arguments before the
 * policy runs. Its side-effect class comes from its annotations ({@link sideEffectOfAnnotations}:
 * `readOnlyHint` → `read_only`, `destructiveHint` → `destructive`, `idempotentHint` →
 * `idempotent`, otherwise `remote_mutation`) unless `overrides` names one: annotations are the
 * server's claims, so they are only the default.
 *
 * A call sends the arguments and, in `_meta[mcpIdempotencyKeyMeta]`, the call's idempotency key.
 * Its result becomes the tool's output as {@link mcpToolOutput} says; `isError: true` becomes a
 * `tool_error` (`MCP_TOOL_ERROR`), a lost connection or timeout `MCP_UNAVAILABLE`, a JSON-RPC
 * error `MCP_REQUEST_FAILED`: the run goes on, the process never crashes. The client stays the
 * caller's (connect it before, close it after); a tool whose outcome a crash left unknown
 * follows its class, like any tool: `read_only` and `idempotent` run again, any other class
 * waits for an operator.
 *
 * Error codes: `MCP_UNAVAILABLE` or `MCP_REQUEST_FAILED` (the tool list could not be read),
 * `INVALID_ARGUMENT` (a name in `include`, `exclude` or `overrides` the server does not have; a
 * tool name or override `defineTool` refuses).
 *
 * @example
 * const client = new Client({ name: 'support-agent', version: '1.0.0' });
 * await client.connect(new StdioClientTransport({ command: 'node', args: ['orders-server.js'] }));
 * const tools = await mcpTools(client, {
 *   overrides: { cancel_order: { sideEffect: 'destructive' } }, // the server said idempotentHint
 *   exclude: ['debug_dump'],
 * });
 * const agent = defineAgent({ name: 'support', model, instructions: '…', tools });
 */
export async function mcpTools(client: McpClient, options: McpToolsOptions = {}): Promise<Tool[]> {
  const listed = await listAll(client);
  const known = new Set(listed.map((tool) => tool.name));
  checkNames('include', options.include, known);
  checkNames('exclude', options.exclude, known);
  checkNames('overrides', Object.keys(options.overrides ?? {}), known);
  const include = options.include === undefined ? undefined : new Set(options.include);
  const exclude = new Set(options.exclude ?? []);
  return listed
    .filter((tool) => (include === undefined || include.has(tool.name)) && !exclude.has(tool.name))
    .map((tool) => toLoomTool(client, tool, options));
}
