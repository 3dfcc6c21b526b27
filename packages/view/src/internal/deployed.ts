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

/** A TypeScript module (loaded through tsx, an optional peer). */
const typeScriptModule = /\.[cm]?tsx?$/;

/**
 * Imports the module at `modulePath`: an ES module as it is, a TypeScript one through tsx's
 * `tsImport` (its own imports of TypeScript files too, without a loader for the rest of the
 * process). Throws `INVALID_ARGUMENT` naming what is missing when tsx is not installed.
 */
async function importModule(modulePath: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(resolve(modulePath)).href;
  if (!typeScriptModule.test(modulePath)) return (await import(url)) as Record<string, unknown>;
  let tsx: { tsImport(specifier: string, parentURL: string): Promise<unknown> };
  try {
    tsx = (await import('tsx/esm/api')) as typeof tsx;
  } catch (error) {
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      `--flows ${modulePath} is TypeScript, and tsx is not installed: install it beside @loom/view (npm install tsx), or give a built ES module (.js, .mjs)`,
      { path: 'flows' },
      error,
    );
  }
  return (await tsx.tsImport(url, import.meta.url)) as Record<string, unknown>;
}

/**
 * The flows and agents a module exports (any export, or an exported array of them): an ES module
 * (.js, .mjs), or TypeScript (.ts, .mts) when tsx is installed.
 */
export async function deployedOf(modulePath: string): Promise<Deployed> {
  let loaded: Record<string, unknown>;
  try {
    loaded = await importModule(modulePath);
  } catch (error) {
    if (error instanceof LoomError) throw error;
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      `--flows ${modulePath} could not be imported: ${error instanceof Error ? error.message : String(error)}. Give an ES module (.js, .mjs) or, with tsx installed, TypeScript (.ts, .mts)`,
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
