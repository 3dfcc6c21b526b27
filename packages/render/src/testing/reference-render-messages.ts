import type { ModelMessage, ToolSpec } from '@loom/reasoning';
import type { BlueprintNode, HistoryStep } from '../blueprint.js';
import { defaultObservation } from '../default-observation.js';
import { LoomError, RenderErrorCode } from '../errors.js';
import type { DroppedPart, RenderOptions, RenderResult } from '../render-messages.js';
import { approximateTokenizer, type Tokenizer } from '../tokenizer.js';

interface RefPart {
  kind: DroppedPart['kind'];
  path: number[];
  step?: number;
  priority: number;
  required: boolean;
  messages: ModelMessage[];
  tools: readonly ToolSpec[];
}

/**
 * The oracle `renderMessages` must equal byte for byte, written to be obviously right rather
 * than fast: recursion to flatten the tree, and after each drop every kept part is measured
 * again from its messages. Quadratic; for tests. It checks nothing a valid blueprint could
 * break: give it valid blueprints and histories. Same errors for a budget too small
 * (`TOKEN_BUDGET_TOO_SMALL` with `requiredTokens` and `budgetTokens`); `passes` is always 2.
 */
export function referenceRenderMessages(
  blueprint: BlueprintNode,
  options: RenderOptions,
): RenderResult {
  const tokenizer = options.tokenizer ?? approximateTokenizer;
  const render = options.renderObservation ?? defaultObservation;
  const parts: RefPart[] = [];
  flatten(blueprint, [], 0, false, parts, render);

  const kept = parts.map(() => true);
  const keptTokens = () =>
    parts.reduce((sum, part, i) => (kept[i] ? sum + partTokens(part, tokenizer) : sum), 0);
  while (keptTokens() > options.tokenBudget) {
    let lowest = -1;
    for (let i = 0; i < parts.length; i++) {
      if (!kept[i] || parts[i]!.required) continue;
      if (lowest === -1 || parts[i]!.priority < parts[lowest]!.priority) lowest = i;
    }
    if (lowest === -1) {
      throw new LoomError(RenderErrorCode.TOKEN_BUDGET_TOO_SMALL, 'the required parts do not fit', {
        requiredTokens: keptTokens(),
        budgetTokens: options.tokenBudget,
      });
    }
    kept[lowest] = false;
  }

  const result: RenderResult = {
    messages: parts.filter((_, i) => kept[i]).flatMap((part) => part.messages),
    tools: parts.filter((_, i) => kept[i]).flatMap((part) => [...part.tools]),
    tokens: keptTokens(),
    dropped: [],
    passes: 2,
  };
  parts.forEach((part, i) => {
    if (kept[i]) return;
    const tokens = partTokens(part, tokenizer);
    result.dropped.push(
      part.step === undefined
        ? { kind: part.kind, path: part.path, priority: part.priority, tokens }
        : { kind: part.kind, path: part.path, step: part.step, priority: part.priority, tokens },
    );
  });
  return result;
}

function flatten(
  node: BlueprintNode,
  path: number[],
  inheritedPriority: number,
  inheritedRequired: boolean,
  parts: RefPart[],
  render: (o: NonNullable<HistoryStep['observations']>[number]) => string,
): void {
  const priority = node.priority ?? inheritedPriority;
  const required = node.required ?? inheritedRequired;
  if (node.kind === 'group') {
    node.children.forEach((child, i) => {
      flatten(child, [...path, i], priority, required, parts, render);
    });
  } else if (node.kind === 'system' || node.kind === 'user' || node.kind === 'assistant') {
    parts.push({
      kind: node.kind,
      path,
      priority,
      required,
      messages: [{ role: node.kind, content: node.text }],
      tools: [],
    });
  } else if (node.kind === 'tools') {
    parts.push({ kind: 'tools', path, priority, required, messages: [], tools: node.tools });
  } else if (node.kind === 'conversation') {
    const keepLast = node.keepLast ?? 0;
    node.exchanges.forEach((exchange, i) => {
      parts.push({
        kind: 'exchange',
        path,
        step: i,
        priority,
        required: required || i >= node.exchanges.length - keepLast,
        messages: [
          { role: 'user', content: exchange.user },
          ...(exchange.steps ?? []).flatMap((step) => referenceStepMessages(step, render)),
        ],
        tools: [],
      });
    });
  } else {
    const keepLast = node.keepLast ?? 0;
    node.steps.forEach((step, i) => {
      parts.push({
        kind: 'history_step',
        path,
        step: i,
        priority,
        required: required || i >= node.steps.length - keepLast,
        messages: referenceStepMessages(step, render),
        tools: [],
      });
    });
  }
}

function referenceStepMessages(
  step: HistoryStep,
  render: (o: NonNullable<HistoryStep['observations']>[number]) => string,
): ModelMessage[] {
  const calls = step.calls ?? [];
  const observations = step.observations ?? [];
  const text = step.text ?? '';
  const messages: ModelMessage[] = [];
  if (calls.length > 0) messages.push({ role: 'assistant', content: text, toolCalls: calls });
  else if (text !== '') messages.push({ role: 'assistant', content: text });
  for (const o of observations) {
    if (o.callId === undefined) continue;
    const tool = calls.find((call) => call.callId === o.callId)!.tool;
    if (o.kind === 'tool_result') {
      messages.push({ role: 'tool', callId: o.callId, tool, content: render(o) });
    } else {
      messages.push({ role: 'tool', callId: o.callId, tool, content: render(o), isError: true });
    }
  }
  for (const o of observations) {
    if (o.callId === undefined) messages.push({ role: 'user', content: render(o) });
  }
  return messages;
}

function partTokens(part: RefPart, tokenizer: Tokenizer): number {
  let tokens = 0;
  for (const tool of part.tools) {
    tokens += tokenizer.count(tool.name);
    tokens += tokenizer.count(tool.description);
    tokens += tokenizer.count(JSON.stringify(tool.inputSchema));
  }
  for (const message of part.messages) {
    tokens += tokenizer.messageOverheadTokens + tokenizer.count(message.content);
    if (message.role === 'assistant') {
      for (const call of message.toolCalls ?? []) {
        tokens += tokenizer.count(call.tool) + tokenizer.count(JSON.stringify(call.input));
      }
    }
  }
  return tokens;
}
