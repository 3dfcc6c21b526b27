import type { ModelMessage } from '@loom/reasoning';
import type { HistoryStep } from './blueprint.js';
import { defaultObservation, type ObservationRenderer } from './default-observation.js';
import { stepMessages } from './internal/step-messages.js';

/** Options of {@link renderHistory}. */
export interface HistoryOptions {
  /** How observations become text. Default {@link defaultObservation}. */
  renderObservation?: ObservationRenderer;
}

/**
 * Turns a run's steps into provider messages, all of them, with no budget: per step the model's
 * turn with its tool calls, one tool message per call, then any invalid decision that answers no
 * call as a user message. `renderMessages` renders a blueprint's history node the same way.
 *
 * Throws `INVALID_HISTORY` (fields `step`, `callId`) for a call with no observation, an
 * observation for a call the step did not make, or two observations for one call.
 *
 * @example
 * renderHistory([
 *   { text: 'Looking it up.', calls: [{ callId: 'c1', tool: 'search', input: { q: 'loom' } }],
 *     observations: [{ kind: 'tool_result', callId: 'c1', content: '3 hits' }] },
 * ]);
 */
export function renderHistory(
  steps: readonly HistoryStep[],
  options: HistoryOptions = {},
): ModelMessage[] {
  const render = options.renderObservation ?? defaultObservation;
  const messages: ModelMessage[] = [];
  for (let i = 0; i < steps.length; i++) {
    for (const message of stepMessages(steps[i]!, i, [], render)) messages.push(message);
  }
  return messages;
}
