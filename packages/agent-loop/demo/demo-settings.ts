// What the demo's driver tells its child processes (through the environment), and the
// deadlines every wait of the demo has.
import type { ModelProvider } from '@loom/reasoning';
import { openAiModel, openAiSettingsFrom } from './openai-model.js';
import { stubSupportModel } from './support-agent.js';

/** A child process (worker or approver) that runs longer than this is killed and the demo fails. */
export const demoLifeDeadlineMs = 45_000;

/** How often a worker looks for the run's pending approval. */
export const demoApprovalPollMs = 25;

/** The settings a worker or approver reads from its environment. */
export interface DemoSettings {
  /** The SQLite file: the one log every process shares. */
  db: string;
  /** The side channel: one line per refund that really ran. */
  refundsFile: string;
  /** `stub` (`pnpm demo`) or `openai` (`pnpm demo:openai`). */
  model: 'stub' | 'openai';
}

/** Reads the settings the driver passed; throws when one is missing (run the driver, not the child). */
export function demoSettingsFrom(env: Record<string, string | undefined>): DemoSettings {
  const db = env.LOOM_DEMO_DB;
  const refundsFile = env.LOOM_DEMO_REFUNDS;
  if (db === undefined || refundsFile === undefined) {
    throw new Error(
      'LOOM_DEMO_DB and LOOM_DEMO_REFUNDS are not set: run the demo through `pnpm demo`, which starts this process',
    );
  }
  return { db, refundsFile, model: env.LOOM_DEMO_MODEL === 'openai' ? 'openai' : 'stub' };
}

/** The environment that hands `settings` to a child process. */
export function demoEnv(settings: DemoSettings): Record<string, string> {
  return {
    LOOM_DEMO_DB: settings.db,
    LOOM_DEMO_REFUNDS: settings.refundsFile,
    LOOM_DEMO_MODEL: settings.model,
  };
}

/** The model a worker runs: the stub, or the endpoint set in the environment. */
export function demoModel(
  settings: DemoSettings,
  env: Record<string, string | undefined>,
): ModelProvider {
  if (settings.model === 'stub') return stubSupportModel();
  const openai = openAiSettingsFrom(env);
  if (!openai.ok) throw new Error(`not set: ${openai.missing.join(', ')}`);
  return openAiModel(openai);
}
