import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Agent } from '@loom/agent-loop';
import type { Flow } from '@loom/event-runtime';
import { LoomError, ViewErrorCode } from '../errors.js';

/** What a `--flows` module exports: flows (`defineFlow`) and agents (`defineAgent`). */
export interface Deployed {
  flows: Flow<never, unknown>[];
  agents: Agent[];
}

function isFlow(value: unknown): value is Flow<never, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { name?: unknown }).name === 'string' &&
    typeof (value as { run?: unknown }).run === 'function'
  );
}

function isAgent(value: unknown): value is Agent {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { name?: unknown }).name === 'string' &&
    (value as { tools?: unknown }).tools instanceof Map &&
    typeof (value as { policy?: unknown }).policy === 'function' &&
    typeof (value as { model?: unknown }).model === 'object'
  );
}

/** The flows and agents an ES module exports (any export, or an exported array of them). */
export async function deployedOf(modulePath: string): Promise<Deployed> {
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(pathToFileURL(resolve(modulePath)).href)) as Record<string, unknown>;
  } catch (error) {
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      `--flows ${modulePath} could not be imported: ${error instanceof Error ? error.message : String(error)}. Give a built ES module (.js, .mjs)`,
      { path: 'flows' },
      error,
    );
  }
  const candidates = Object.values(loaded).flatMap((value) =>
    Array.isArray(value) ? value : [value],
  );
  const deployed = { flows: candidates.filter(isFlow), agents: candidates.filter(isAgent) };
  if (deployed.flows.length === 0 && deployed.agents.length === 0) {
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      `--flows ${modulePath} exports no flow and no agent: export the defineFlow(...) and defineAgent(...) values (or an array of them)`,
      { path: 'flows' },
    );
  }
  return deployed;
}
