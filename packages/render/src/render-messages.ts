import type { ModelMessage, ToolSpec } from '@loom/reasoning';
import type { BlueprintNode } from './blueprint.js';
import { defaultObservation, type ObservationRenderer } from './default-observation.js';
import { LoomError, RenderErrorCode } from './errors.js';
import { type Part, PartCollector } from './internal/part-collector.js';
import { approximateTokenizer, type Tokenizer } from './tokenizer.js';
import { traverseBlueprint } from './traverse-blueprint.js';

/** Options of {@link renderMessages}. */
export interface RenderOptions {
  /** Most tokens the messages and tools may take together. A whole number ≥ 0, or `Infinity`. */
  tokenBudget: number;
  /** Default {@link approximateTokenizer}. */
  tokenizer?: Tokenizer;
  /** How observations become text. Default {@link defaultObservation}. */
  renderObservation?: ObservationRenderer;
}

/** A part the budget left out. */
export interface DroppedPart {
  kind: 'system' | 'user' | 'assistant' | 'tools' | 'history_step' | 'exchange';
  /** The node, as child indices from the blueprint's root. */
  path: readonly number[];
  /** For a history step: its index in the node's `steps`; for an exchange, in its `exchanges`. */
  step?: number;
  priority: number;
  tokens: number;
}

/** What {@link renderMessages} produced. */
export interface RenderResult {
  /** The provider messages, in blueprint order. */
  messages: ModelMessage[];
  /** The tool specs of every kept tools node, in blueprint order. */
  tools: ToolSpec[];
  /** Tokens of what was kept, by the tokenizer (≤ the budget). */
  tokens: number;
  /** What was left out, in blueprint order. */
  dropped: DroppedPart[];
  /**
   * Walks over the parts: 1 when everything fit (measured and emitted in one walk), 2 when parts
   * were dropped (one walk to measure, one to emit). Never more: each text is measured once.
   */
  passes: 1 | 2;
}

/**
 * Renders a blueprint into provider messages and tools that fit `tokenBudget`. Every text is
 * measured once; when the total is over budget, optional parts drop lowest priority first (the
 * earlier part first among equals) until the rest fits; a history step (a tool call and its
 * result) and a conversation's exchange (a message and all of its answer) drop whole. Pure and synchronous: the same input gives the same output.
 *
 * Throws `TOKEN_BUDGET_TOO_SMALL` (fields `requiredTokens`, `budgetTokens`) when the required
 * parts alone do not fit; `INVALID_BLUEPRINT`, `INVALID_HISTORY` or `TEXT_TOO_LARGE` for input
 * it cannot render; `INVALID_ARGUMENT` for a bad budget or a tokenizer that returns something
 * other than a whole number ≥ 0.
 *
 * @example
 * const { messages, tools } = renderMessages(
 *   { kind: 'group', children: [
 *     { kind: 'system', text: 'You triage support tickets.', required: true },
 *     { kind: 'history', steps, keepLast: 2, priority: 1 },
 *   ] },
 *   { tokenBudget: 32_000 },
 * );
 */
export function renderMessages(blueprint: BlueprintNode, options: RenderOptions): RenderResult {
  const budget = options.tokenBudget;
  if (
    typeof budget !== 'number' ||
    !(budget >= 0) ||
    (!Number.isInteger(budget) && budget !== Infinity)
  ) {
    throw new LoomError(
      RenderErrorCode.INVALID_ARGUMENT,
      `tokenBudget must be a whole number ≥ 0 or Infinity, got ${String(budget)}`,
      { option: 'tokenBudget' },
    );
  }
  const collector = new PartCollector(
    options.tokenizer ?? approximateTokenizer,
    options.renderObservation ?? defaultObservation,
  );
  // Pass 1: measure every part once, emitting as if everything fits.
  traverseBlueprint(blueprint, collector.visit);
  const { parts, messages, tools } = collector;
  if (collector.totalTokens <= budget) {
    return { messages, tools, tokens: collector.totalTokens, dropped: [], passes: 1 };
  }
  if (collector.requiredTokens > budget) {
    throw new LoomError(
      RenderErrorCode.TOKEN_BUDGET_TOO_SMALL,
      `the required parts need ${collector.requiredTokens} tokens but the budget is ${budget}: raise tokenBudget, shorten the required parts, or lower keepLast`,
      { requiredTokens: collector.requiredTokens, budgetTokens: budget },
    );
  }
  const drop = chooseDrops(parts, collector.totalTokens - budget);
  // Pass 2: emit what is kept.
  const kept: ModelMessage[] = [];
  const keptTools: ToolSpec[] = [];
  const dropped: DroppedPart[] = [];
  let tokens = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (drop[i] === 1) {
      dropped.push(droppedPart(part));
      continue;
    }
    tokens += part.tokens;
    for (const message of part.messages) kept.push(message);
    if (part.tools !== undefined) for (const tool of part.tools) keptTools.push(tool);
  }
  return { messages: kept, tools: keptTools, tokens, dropped, passes: 2 };
}

/** Marks optional parts, lowest priority (then earliest) first, until `excess` tokens are gone. */
function chooseDrops(parts: readonly Part[], excess: number): Uint8Array {
  const order: number[] = [];
  for (let i = 0; i < parts.length; i++) if (!parts[i]!.required) order.push(i);
  order.sort((a, b) => {
    const pa = parts[a]!.priority;
    const pb = parts[b]!.priority;
    // Not `pa - pb`: Infinity - Infinity is NaN, which would lose the tie-break.
    if (pa < pb) return -1;
    if (pa > pb) return 1;
    return a - b;
  });
  const drop = new Uint8Array(parts.length);
  let freed = 0;
  for (const i of order) {
    if (freed >= excess) break;
    drop[i] = 1;
    freed += parts[i]!.tokens;
  }
  return drop;
}

function droppedPart(part: Part): DroppedPart {
  return part.step === undefined
    ? { kind: part.kind, path: part.path, priority: part.priority, tokens: part.tokens }
    : {
        kind: part.kind,
        path: part.path,
        step: part.step,
        priority: part.priority,
        tokens: part.tokens,
      };
}
