// Workloads of P14, shared by the vitest bench (src/render.bench.ts) and the ratio script
// (bench/p14.ts), so both measure the same thing.
import type { ToolSpec } from '@loom/reasoning';
import type { BlueprintNode, HistoryStep } from '../src/index.js';
import { approximateTokenizer, type Tokenizer, traverseBlueprint } from '../src/index.js';

/**
 * A blueprint of exactly `nodes` nodes: a root group holding groups of up to nine system texts,
 * the shape a real prompt has (sections of parts), nested two levels.
 */
export function blueprintOf(nodes: number): BlueprintNode {
  const children: BlueprintNode[] = [];
  let count = 1;
  while (count < nodes) {
    const section: BlueprintNode[] = [];
    children.push({ kind: 'group', priority: count % 7, children: section });
    count++;
    for (let j = 0; j < 9 && count < nodes; j++, count++) {
      section.push({ kind: 'system', text: `part ${count}`, priority: j });
    }
  }
  return { kind: 'group', children };
}

/** One walk; returns the nodes visited, so the work cannot be optimised away. */
export function traverse(blueprint: BlueprintNode): number {
  let visited = 0;
  traverseBlueprint(blueprint, () => {
    visited++;
  });
  return visited;
}

const tools: ToolSpec[] = ['read_file', 'write_file', 'search', 'run_tests', 'http_get'].map(
  (name) => ({
    name,
    description: `${name.replace('_', ' ')}: does what it says, and reports what happened.`,
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  }),
);

/** A 400-step agent run: each step thinks, calls one or two tools and gets ~600 characters back. */
export function runOf(steps: number): HistoryStep[] {
  const history: HistoryStep[] = [];
  for (let i = 0; i < steps; i++) {
    const calls = [{ callId: `s${i}a`, tool: 'read_file', input: { path: `src/file-${i}.ts` } }];
    if (i % 3 === 0) calls.push({ callId: `s${i}b`, tool: 'search', input: { path: `q${i}` } });
    history.push({
      text: `Step ${i}: reading the next file to find where the bug is.`,
      calls,
      observations: calls.map((call, j) =>
        j === 1 && i % 6 === 0
          ? { kind: 'tool_error' as const, callId: call.callId, message: 'ENOENT: no such file' }
          : {
              kind: 'tool_result' as const,
              callId: call.callId,
              content: `export const value${i} = ${i};\n`.repeat(20),
            },
      ),
    });
  }
  return history;
}

/** The prompt of the next decision of a run: required system text, tools and task, then history. */
export function agentBlueprint(history: readonly HistoryStep[]): BlueprintNode {
  return {
    kind: 'group',
    children: [
      { kind: 'system', text: 'You are a careful coding agent. '.repeat(20), required: true },
      { kind: 'tools', tools, required: true },
      { kind: 'user', text: 'Find and fix the failing test in src/.', required: true },
      { kind: 'history', steps: history, keepLast: 4, priority: 1 },
    ],
  };
}

/** The approximate tokenizer, counting how many texts it measured. */
export function countingTokenizer(): Tokenizer & { texts: number } {
  const tokenizer = {
    name: 'approximate (counting)',
    messageOverheadTokens: approximateTokenizer.messageOverheadTokens,
    texts: 0,
    count(text: string): number {
      tokenizer.texts++;
      return approximateTokenizer.count(text);
    },
  };
  return tokenizer;
}
