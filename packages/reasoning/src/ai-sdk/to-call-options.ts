import type { ModelRequest } from '../model-provider.js';
import type { ModelMessage, ToolChoice } from '../model-types.js';

/** Loom's request as the specification's prompt, tools and tool choice. */
export function toCallOptions(request: ModelRequest) {
  const tools = request.tools?.map((tool) => ({
    type: 'function',
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
  }));
  return {
    prompt: request.messages.map(toPromptMessage),
    ...(tools !== undefined && tools.length > 0 ? { tools } : {}),
    ...(request.toolChoice !== undefined ? { toolChoice: toChoice(request.toolChoice) } : {}),
    ...(request.maxOutputTokens !== undefined ? { maxOutputTokens: request.maxOutputTokens } : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.responseFormat !== undefined
      ? {
          responseFormat: {
            type: 'json' as const,
            schema: request.responseFormat.schema,
            ...(request.responseFormat.name === undefined
              ? {}
              : { name: request.responseFormat.name }),
          },
        }
      : {}),
  };
}

function toPromptMessage(message: ModelMessage): unknown {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return { role: 'user', content: [{ type: 'text', text: message.content }] };
    case 'assistant': {
      const text = message.content === '' ? [] : [{ type: 'text', text: message.content }];
      const calls = (message.toolCalls ?? []).map((call) => ({
        type: 'tool-call',
        toolCallId: call.callId,
        toolName: call.tool,
        input: call.input,
      }));
      return { role: 'assistant', content: [...text, ...calls] };
    }
    case 'tool':
      return {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: message.callId,
            toolName: message.tool,
            output: {
              type: message.isError === true ? 'error-text' : 'text',
              value: message.content,
            },
          },
        ],
      };
  }
}

function toChoice(choice: ToolChoice): unknown {
  return typeof choice === 'string' ? { type: choice } : { type: 'tool', toolName: choice.tool };
}
