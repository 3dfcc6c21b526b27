import type { JsonValue, ToolCall, ToolSpec } from '@loom/reasoning';

/**
 * What every blueprint node may say about itself. A node that says nothing inherits from its
 * nearest ancestor that does, and the root's defaults are priority 0, not required.
 */
export interface PartOptions {
  /**
   * Lower drops first when the prompt is over budget; among equal priorities the earlier part
   * (in the tree's depth-first order: for a history, the older step) drops first.
   */
  priority?: number;
  /** Never dropped: if the required parts alone do not fit, rendering throws `TOKEN_BUDGET_TOO_SMALL`. */
  required?: boolean;
}

/** System text (a role, instructions, rules): one system message. */
export interface SystemNode extends PartOptions {
  kind: 'system';
  text: string;
}

/** Text in the user's voice (the task, a reply, an instruction for this turn): one user message. */
export interface UserNode extends PartOptions {
  kind: 'user';
  text: string;
}

/**
 * Text in the model's own voice (an earlier reply of a conversation, an example answer): one
 * assistant message.
 */
export interface AssistantNode extends PartOptions {
  kind: 'assistant';
  text: string;
}

/** Tools the model may call; they go to the request's tool list, and drop together. */
export interface ToolsNode extends PartOptions {
  kind: 'tools';
  tools: readonly ToolSpec[];
}

/**
 * A run's steps. Each step is one part (the model's turn with its tool calls, and the answer to
 * every call), so a call is never sent without its result. The newest `keepLast` steps are
 * required whatever the node says.
 */
export interface HistoryNode extends PartOptions {
  kind: 'history';
  steps: readonly HistoryStep[];
  /** How many of the newest steps are never dropped. Default 0. */
  keepLast?: number;
}

/**
 * A conversation's earlier exchanges, oldest first. Each exchange is one part (the user's message,
 * then every step of the model's answer: its tool calls with their results, and its reply), so
 * over budget a whole exchange drops, the oldest first among equal priorities, and a call never
 * loses its result nor a reply its question. The newest `keepLast` exchanges are required
 * whatever the node says.
 */
export interface ConversationNode extends PartOptions {
  kind: 'conversation';
  exchanges: readonly Exchange[];
  /** How many of the newest exchanges are never dropped. Default 0. */
  keepLast?: number;
}

/** One exchange of a conversation: a user's message and the steps that answered it. */
export interface Exchange {
  /** The user's message: one user message. */
  user: string;
  /** The model's steps, rendered as a history's (the last one is usually its reply: text, no calls). */
  steps?: readonly HistoryStep[];
}

/** Children render in order; their priority and `required` default to the group's. */
export interface GroupNode extends PartOptions {
  kind: 'group';
  children: readonly BlueprintNode[];
}

/** One node of a prompt blueprint. */
export type BlueprintNode =
  | SystemNode
  | UserNode
  | AssistantNode
  | ToolsNode
  | HistoryNode
  | ConversationNode
  | GroupNode;

/** What came back for one tool call, or what the runtime says about an unusable decision. */
export type Observation =
  /** The tool ran and returned `content`. */
  | { kind: 'tool_result'; callId: string; content: JsonValue }
  /** The tool ran and failed. */
  | { kind: 'tool_error'; callId: string; message: string }
  /** The policy (or an operator) refused the call. */
  | { kind: 'denied'; callId: string; reason: string }
  /**
   * The model's decision could not be used: arguments that are not JSON, an unknown tool (with
   * the `callId` of that call), or no call where one was required (without a `callId`: rendered
   * as a user message).
   */
  | { kind: 'invalid_decision'; callId?: string; message: string };

/**
 * One step of a run as the model saw it: its words, the tool calls it asked for, and one
 * observation per call (plus, at most, invalid decisions that answer no call).
 */
export interface HistoryStep {
  /** The model's text; an empty or missing text with no calls renders no assistant message. */
  text?: string;
  calls?: readonly ToolCall[];
  observations?: readonly Observation[];
}
