import { LoomError, ReasoningErrorCode } from '../errors.js';
import type { ModelRequest } from '../model-provider.js';

/**
 * Refuses a request no provider could serve, before anything is sent: not an object, no
 * message list, two tools of one name, or a tool choice naming a tool the request does not offer.
 * Throws `INVALID_ARGUMENT` naming the field.
 */
export function checkRequest(request: ModelRequest): void {
  if (typeof request !== 'object' || request === null || !Array.isArray(request.messages)) {
    throw invalid('messages', 'a model request needs a `messages` array');
  }
  const names = new Set<string>();
  for (const tool of request.tools ?? []) {
    if (names.has(tool.name)) {
      throw invalid('tools', `two tools are named '${tool.name}': tool names must be unique`);
    }
    names.add(tool.name);
  }
  const choice = request.toolChoice;
  if (typeof choice === 'object' && choice !== null && !names.has(choice.tool)) {
    throw invalid(
      'toolChoice',
      `toolChoice names the tool '${choice.tool}', which is not among the request's tools`,
    );
  }
}

function invalid(option: string, message: string): LoomError {
  return new LoomError(ReasoningErrorCode.INVALID_ARGUMENT, message, { option });
}
