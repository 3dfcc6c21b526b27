import type { JsonValue } from '@loom/event-runtime';
import type { ToolCall } from '@loom/reasoning';
import type { Observation } from '@loom/render';

/** One finished turn of a run, as the policy and the prompt see it. */
export interface TurnView {
  /** From 1. */
  readonly turn: number;
  /** What the model said, if anything. */
  readonly text: string;
  /** The well-formed calls the model made (JSON input, a tool it was offered). */
  readonly calls: readonly ToolCall[];
  /** What came back: results, errors, denials, invalid decisions. */
  readonly observations: readonly Observation[];
}

/**
 * A run as a policy sees it. Each policy call gets a fresh view; its turns are frozen, so
 * nothing a policy does to it reaches the store, the prompt or a later turn.
 */
export interface RunView {
  readonly runId: string;
  /** The agent's input. */
  readonly input: JsonValue;
  /** The turn being decided, from 1. */
  readonly turn: number;
  /** The finished turns, oldest first. */
  readonly turns: readonly TurnView[];
}
