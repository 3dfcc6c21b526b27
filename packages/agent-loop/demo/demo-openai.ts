// `pnpm demo:openai`: the same demo with a real model behind an OpenAI-compatible endpoint
// (LOOM_OPENAI_BASE_URL, OPENAI_API_KEY, LOOM_OPENAI_MODEL). Without them it says how to set
// them and exits 0.
import { openAiHowTo, openAiSettingsFrom } from './openai-model.js';
import { runDemo } from './run-demo.js';

const settings = openAiSettingsFrom(process.env as Record<string, string | undefined>);
if (!settings.ok) {
  console.log(openAiHowTo(settings.missing));
} else {
  console.log(`model: ${settings.model} at ${settings.baseUrl}`);
  process.exitCode = (await runDemo('openai')) ? 0 : 1;
}
