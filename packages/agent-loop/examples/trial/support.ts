// The trial's agent (issue 29), the only code of the user's own: a support agent on threads that
// may ask a person (ask_human) and answers as JSON that fits a schema. Its model is any
// OpenAI-compatible chat-completions endpoint (LOOM_OPENAI_BASE_URL, up to /v1). `loom worker
// --flows examples/trial/support.ts` runs it; web.ts serves it to a browser.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { defineAgent } from '@loom/agent-loop';
import { fromAiSdk } from '@loom/reasoning/ai-sdk';
import { z } from 'zod';

const provider = createOpenAICompatible({
  name: 'local',
  baseURL: process.env.LOOM_OPENAI_BASE_URL ?? 'http://127.0.0.1:11434/v1',
  apiKey: process.env.OPENAI_API_KEY ?? 'none',
  includeUsage: true,
});

export const support = defineAgent({
  name: 'support',
  model: fromAiSdk(provider.chatModel(process.env.LOOM_OPENAI_MODEL ?? 'qwen2.5:7b')),
  instructions: 'You answer customers about their orders. Ask a person when you are not sure.',
  tools: [],
  askHuman: true,
  thread: { busy: 'queue' },
  output: z.object({ reply: z.string(), orderId: z.string() }),
});
