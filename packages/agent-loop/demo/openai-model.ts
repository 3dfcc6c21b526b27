// The model of `pnpm demo:openai`: any OpenAI-compatible chat-completions endpoint (OpenAI,
// Ollama, vLLM, LM Studio, a gateway), through @loom/reasoning's AI SDK adapter.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { ModelProvider } from '@loom/reasoning';
import { fromAiSdk } from '@loom/reasoning/ai-sdk';

/** The environment `pnpm demo:openai` reads, each with what it is. */
export const openAiSettings = [
  ['LOOM_OPENAI_BASE_URL', 'the endpoint, up to /v1', 'https://api.openai.com/v1'],
  ['OPENAI_API_KEY', 'the key it takes (any text for a local server without keys)', 'sk-...'],
  ['LOOM_OPENAI_MODEL', 'a chat model that can call tools', 'gpt-4o-mini'],
] as const;

/** A model call may take this long before it fails the run (`model_failed`). */
export const openAiTimeoutMs = 60_000;

/** The settings, or the names of those missing. */
export function openAiSettingsFrom(
  env: Record<string, string | undefined>,
): { ok: true; baseUrl: string; apiKey: string; model: string } | { ok: false; missing: string[] } {
  const missing = openAiSettings
    .map(([name]) => name)
    .filter((name) => (env[name] ?? '').trim() === '');
  if (missing.length > 0) return { ok: false, missing };
  return {
    ok: true,
    baseUrl: (env.LOOM_OPENAI_BASE_URL as string).trim().replace(/\/+$/, ''),
    apiKey: (env.OPENAI_API_KEY as string).trim(),
    model: (env.LOOM_OPENAI_MODEL as string).trim(),
  };
}

/** What `pnpm demo:openai` prints when a setting is missing: exactly how to set them. */
export function openAiHowTo(missing: readonly string[]): string {
  return [
    `pnpm demo:openai runs the demo's agent against a real OpenAI-compatible endpoint; not set: ${missing.join(', ')}.`,
    'Set all three and run it again, for example:',
    '',
    ...openAiSettings.map(([name, , example]) => `  export ${name}=${example}`),
    '  pnpm demo:openai',
    '',
    ...openAiSettings.map(([name, what]) => `${name}: ${what}.`),
    'A local server works too: LOOM_OPENAI_BASE_URL=http://127.0.0.1:11434/v1 (Ollama), OPENAI_API_KEY=local, LOOM_OPENAI_MODEL=qwen2.5:7b.',
    'Without them, `pnpm demo` runs the same agent on a scripted stub model.',
  ].join('\n');
}

/** The endpoint's model as a Loom provider. */
export function openAiModel(settings: {
  baseUrl: string;
  apiKey: string;
  model: string;
}): ModelProvider {
  const endpoint = createOpenAICompatible({
    name: 'openai-compatible',
    baseURL: settings.baseUrl,
    apiKey: settings.apiKey,
    includeUsage: true,
  });
  return fromAiSdk(endpoint.chatModel(settings.model), {
    timeoutMs: openAiTimeoutMs,
    generateTimeoutMs: openAiTimeoutMs,
  });
}
