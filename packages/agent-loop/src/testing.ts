import { type AgentBug, testBugs } from './internal/test-bugs.js';

export type { AgentBug } from './internal/test-bugs.js';

/**
 * Test-only: re-introduces a known bug of the agent loop in this process (every agent runtime in
 * it) until called again with `undefined`, so a test can prove that its checks catch the bug.
 * `'rerun-interrupted-tool'`: a non-idempotent call interrupted mid-call runs again without an
 * `interrupted_side_effect` approval. `'forget-decisions'`: a replayed turn calls the model
 * again. Resets the count {@link agentBugHits} reads. Never call it outside a test.
 *
 * @example
 * injectAgentBug('rerun-interrupted-tool');
 * try { await runTheSimulation(); } finally { injectAgentBug(undefined); }
 */
export function injectAgentBug(bug: AgentBug | undefined): void {
  testBugs.active = bug;
  testBugs.hits = 0;
}

/** How many times the injected bug's code path ran since {@link injectAgentBug}. */
export function agentBugHits(): number {
  return testBugs.hits;
}
