import type { ModelMessage, ToolSpec } from '@loom/reasoning';
import type { BlueprintNode, PartOptions } from '../blueprint.js';
import type { ObservationRenderer } from '../default-observation.js';
import { LoomError, RenderErrorCode } from '../errors.js';
import { RenderLimits } from '../limits.js';
import type { Tokenizer } from '../tokenizer.js';
import type { BlueprintVisitor } from '../traverse-blueprint.js';
import { stepMessages } from './step-messages.js';

/** One unit the budget keeps or drops whole. */
export interface Part {
  kind: 'system' | 'user' | 'assistant' | 'tools' | 'history_step' | 'exchange';
  path: readonly number[];
  step: number | undefined;
  priority: number;
  required: boolean;
  tokens: number;
  messages: readonly ModelMessage[];
  tools: readonly ToolSpec[] | undefined;
}

/**
 * The measuring walk of `renderMessages`: a visitor that turns each leaf node into parts,
 * measures each text once, and emits everything as if it all fits.
 */
export class PartCollector {
  readonly parts: Part[] = [];
  readonly messages: ModelMessage[] = [];
  readonly tools: ToolSpec[] = [];
  totalTokens = 0;
  requiredTokens = 0;
  // What a node without its own priority/required inherits: the values at depth - 1 of the
  // nearest ancestor, which in a depth-first walk is the last node seen one level up.
  private readonly priorities: number[] = [];
  private readonly requireds: boolean[] = [];

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly render: ObservationRenderer,
  ) {}

  readonly visit: BlueprintVisitor = (node, depth, path) => {
    if (node === null || typeof node !== 'object') this.invalid(path, 'a node must be an object');
    const priority = this.ownPriority(node, path) ?? (depth > 0 ? this.priorities[depth - 1]! : 0);
    const required =
      this.ownRequired(node, path) ?? (depth > 0 ? this.requireds[depth - 1]! : false);
    this.priorities[depth] = priority;
    this.requireds[depth] = required;
    switch (node.kind) {
      case 'group':
        return undefined;
      case 'system':
      case 'user':
      case 'assistant': {
        if (typeof node.text !== 'string')
          this.invalid(path, `a ${node.kind} node needs text: a string`);
        const message: ModelMessage = { role: node.kind, content: node.text };
        const tokens = this.messageTokens(message, path);
        this.add(node.kind, [...path], undefined, priority, required, tokens, [message], undefined);
        return undefined;
      }
      case 'tools':
        this.addTools(node.tools, [...path], priority, required);
        return undefined;
      case 'history':
        this.addHistory(node, [...path], priority, required);
        return undefined;
      case 'conversation':
        this.addConversation(node, [...path], priority, required);
        return undefined;
      default:
        return this.invalid(
          path,
          `unknown node kind ${JSON.stringify((node as { kind?: unknown }).kind)}: use system, user, assistant, tools, history, conversation or group`,
        );
    }
  };

  private add(
    kind: Part['kind'],
    path: readonly number[],
    step: number | undefined,
    priority: number,
    required: boolean,
    tokens: number,
    messages: readonly ModelMessage[],
    tools: readonly ToolSpec[] | undefined,
  ): void {
    this.parts.push({ kind, path, step, priority, required, tokens, messages, tools });
    this.totalTokens += tokens;
    if (required) this.requiredTokens += tokens;
    for (const message of messages) this.messages.push(message);
    if (tools !== undefined) for (const tool of tools) this.tools.push(tool);
  }

  private addTools(
    tools: readonly ToolSpec[],
    path: readonly number[],
    priority: number,
    required: boolean,
  ): void {
    if (!Array.isArray(tools))
      this.invalid(path, 'a tools node needs tools: an array of tool specs');
    let tokens = 0;
    for (const tool of tools) {
      if (
        tool === null ||
        typeof tool !== 'object' ||
        typeof tool.name !== 'string' ||
        typeof tool.description !== 'string'
      ) {
        this.invalid(path, 'each tool spec needs a string name and description');
      }
      tokens +=
        this.count(tool.name, path) +
        this.count(tool.description, path) +
        this.count(this.json(tool.inputSchema, path), path);
    }
    this.add('tools', path, undefined, priority, required, tokens, [], tools);
  }

  private addHistory(
    node: Extract<BlueprintNode, { kind: 'history' }>,
    path: readonly number[],
    priority: number,
    required: boolean,
  ): void {
    const { steps } = node;
    if (!Array.isArray(steps)) this.invalid(path, 'a history node needs steps: an array');
    const keptFrom = this.keptFrom(steps.length, node.keepLast, path);
    for (let i = 0; i < steps.length; i++) {
      const messages = stepMessages(steps[i]!, i, path, this.render);
      this.addMessages('history_step', path, i, priority, required || i >= keptFrom, messages);
    }
  }

  private addConversation(
    node: Extract<BlueprintNode, { kind: 'conversation' }>,
    path: readonly number[],
    priority: number,
    required: boolean,
  ): void {
    const { exchanges } = node;
    if (!Array.isArray(exchanges)) {
      this.invalid(path, 'a conversation node needs exchanges: an array');
    }
    const keptFrom = this.keptFrom(exchanges.length, node.keepLast, path);
    for (let i = 0; i < exchanges.length; i++) {
      const exchange = exchanges[i];
      if (exchange === null || typeof exchange !== 'object' || typeof exchange.user !== 'string') {
        this.invalid(path, `exchange ${i} needs user: a string`);
      }
      const steps = exchange.steps ?? [];
      if (!Array.isArray(steps)) this.invalid(path, `exchange ${i}: steps must be an array`);
      const messages: ModelMessage[] = [{ role: 'user', content: exchange.user }];
      for (let s = 0; s < steps.length; s++) {
        for (const message of stepMessages(steps[s]!, s, path, this.render)) messages.push(message);
      }
      this.addMessages('exchange', path, i, priority, required || i >= keptFrom, messages);
    }
  }

  /** Where the newest `keepLast` (checked; default 0) of `length` units begin. */
  private keptFrom(length: number, keepLast: number | undefined, path: readonly number[]): number {
    const kept = keepLast ?? 0;
    if (!Number.isSafeInteger(kept) || kept < 0) {
      this.invalid(path, `keepLast must be a whole number ≥ 0, got ${String(kept)}`);
    }
    return length - kept;
  }

  /** One unit of messages that is kept or dropped whole (a history step, an exchange), counted. */
  private addMessages(
    kind: 'history_step' | 'exchange',
    path: readonly number[],
    index: number,
    priority: number,
    required: boolean,
    messages: ModelMessage[],
  ): void {
    let tokens = 0;
    for (const message of messages) tokens += this.messageTokens(message, path);
    this.add(kind, path, index, priority, required, tokens, messages, undefined);
  }

  private messageTokens(message: ModelMessage, path: readonly number[]): number {
    let tokens = this.tokenizer.messageOverheadTokens + this.count(message.content, path);
    if (message.role === 'assistant' && message.toolCalls !== undefined) {
      for (const call of message.toolCalls) {
        tokens += this.count(call.tool, path) + this.count(this.json(call.input, path), path);
      }
    }
    return tokens;
  }

  private count(text: string, path: readonly number[]): number {
    if (text.length > RenderLimits.textLengthMax) {
      throw new LoomError(
        RenderErrorCode.TEXT_TOO_LARGE,
        `a text at [${path.join(', ')}] is ${text.length} code units long, over RenderLimits.textLengthMax (${RenderLimits.textLengthMax}): truncate it before rendering`,
        {
          nodePath: [...path],
          length: text.length,
          limit: 'textLengthMax',
          max: RenderLimits.textLengthMax,
        },
      );
    }
    const tokens = this.tokenizer.count(text);
    if (!Number.isSafeInteger(tokens) || tokens < 0) {
      throw new LoomError(
        RenderErrorCode.INVALID_ARGUMENT,
        `tokenizer ${this.tokenizer.name} counted ${String(tokens)} tokens: a tokenizer must return a whole number ≥ 0`,
        { option: 'tokenizer' },
      );
    }
    return tokens;
  }

  private json(value: unknown, path: readonly number[]): string {
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch (error) {
      return this.invalid(path, 'a tool input or schema is not JSON (a cycle or a BigInt)', error);
    }
    return (
      text ?? this.invalid(path, 'a tool input or schema is not JSON (undefined or a function)')
    );
  }

  private ownPriority(node: PartOptions, path: readonly number[]): number | undefined {
    const { priority } = node;
    if (priority !== undefined && (typeof priority !== 'number' || Number.isNaN(priority))) {
      this.invalid(path, `priority must be a number, got ${String(priority)}`);
    }
    return priority;
  }

  private ownRequired(node: PartOptions, path: readonly number[]): boolean | undefined {
    const { required } = node;
    if (required !== undefined && typeof required !== 'boolean') {
      this.invalid(path, `required must be true or false, got ${String(required)}`);
    }
    return required;
  }

  private invalid(path: readonly number[], message: string, cause?: unknown): never {
    throw new LoomError(
      RenderErrorCode.INVALID_BLUEPRINT,
      `the blueprint node at [${path.join(', ')}]: ${message}`,
      { nodePath: [...path] },
      cause,
    );
  }
}
