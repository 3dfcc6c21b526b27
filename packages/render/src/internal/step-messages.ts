import type { ModelMessage, ToolCall } from '@loom/reasoning';
import type { HistoryStep, Observation } from '../blueprint.js';
import type { ObservationRenderer } from '../default-observation.js';
import { LoomError, RenderErrorCode } from '../errors.js';

/**
 * The messages of one history step: the model's turn (if it said or asked anything), one tool
 * message per call in the order the observations came, then invalid decisions that answer no
 * call as user messages (a tool message must follow its assistant turn directly).
 * Throws `INVALID_HISTORY` for anything a provider would reject as an orphan.
 */
export function stepMessages(
  step: HistoryStep,
  stepIndex: number,
  path: readonly number[],
  render: ObservationRenderer,
): ModelMessage[] {
  const fail = (message: string, callId?: string): never => {
    throw new LoomError(
      RenderErrorCode.INVALID_HISTORY,
      `step ${stepIndex} of the history at [${path.join(', ')}]: ${message}`,
      callId === undefined
        ? { nodePath: [...path], step: stepIndex }
        : { nodePath: [...path], step: stepIndex, callId },
    );
  };
  if (step === null || typeof step !== 'object') return fail('a step must be an object');
  const text = step.text ?? '';
  const calls = step.calls ?? [];
  const observations = step.observations ?? [];
  if (typeof text !== 'string') return fail('text must be a string');
  if (!Array.isArray(calls)) return fail('calls must be an array');
  if (!Array.isArray(observations)) return fail('observations must be an array');

  const messages: ModelMessage[] = [];
  const byId = new Map<string, ToolCall>();
  if (calls.length > 0) {
    for (const call of calls) {
      if (
        call === null ||
        typeof call !== 'object' ||
        typeof call.callId !== 'string' ||
        typeof call.tool !== 'string'
      ) {
        fail('each call needs a string callId and tool');
      }
      if (byId.has(call.callId)) fail(`two calls share callId ${call.callId}`, call.callId);
      byId.set(call.callId, call);
    }
    messages.push({ role: 'assistant', content: text, toolCalls: calls });
  } else if (text.length > 0) {
    messages.push({ role: 'assistant', content: text });
  }

  const answered = new Set<string>();
  let unanswered: Observation[] | undefined;
  for (const observation of observations) {
    if (observation === null || typeof observation !== 'object')
      return fail('an observation must be an object');
    const callId = observation.callId;
    if (callId === undefined) {
      if (observation.kind !== 'invalid_decision') {
        fail(`a ${String(observation.kind)} observation needs the callId of the call it answers`);
      }
      if (unanswered === undefined) unanswered = [];
      unanswered.push(observation);
      continue;
    }
    const call = byId.get(callId);
    if (call === undefined)
      fail(`an observation answers call ${callId}, which the step did not make`, callId);
    if (answered.has(callId)) fail(`call ${callId} has two observations`, callId);
    answered.add(callId);
    const content = renderText(render, observation);
    messages.push(
      observation.kind === 'tool_result'
        ? { role: 'tool', callId, tool: call!.tool, content }
        : { role: 'tool', callId, tool: call!.tool, content, isError: true },
    );
  }
  if (answered.size !== calls.length) {
    const missing = calls.find((call) => !answered.has(call.callId))!;
    fail(
      `call ${missing.callId} (${missing.tool}) has no observation: render a step only once every call it made is answered`,
      missing.callId,
    );
  }
  if (unanswered !== undefined) {
    for (const observation of unanswered)
      messages.push({ role: 'user', content: renderText(render, observation) });
  }
  return messages;
}

function renderText(render: ObservationRenderer, observation: Observation): string {
  const content = render(observation);
  if (typeof content !== 'string') {
    throw new LoomError(
      RenderErrorCode.INVALID_ARGUMENT,
      `renderObservation returned ${typeof content} for a ${observation.kind} observation: it must return a string`,
      { option: 'renderObservation' },
    );
  }
  return content;
}
