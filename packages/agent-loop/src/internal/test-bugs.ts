// Test-only switches that re-introduce known bugs of the agent loop, so a simulator can prove
// its invariants catch them (`@loom/agent-loop/testing`). Off unless a test turns one on.

/** A known bug the agent loop can be made to have again, for a test. */
export type AgentBug =
  /** A non-idempotent call whose start mark was replayed without a result runs again, unasked. */
  | 'rerun-interrupted-tool'
  /** A replayed turn asks the model again instead of reading its recorded decision. */
  | 'forget-decisions';

/** The bug switched on (none by default), and how many times its code path ran. */
export const testBugs: { active: AgentBug | undefined; hits: number } = {
  active: undefined,
  hits: 0,
};

/** True (and counted) when `bug` is switched on. */
export function bugStrikes(bug: AgentBug): boolean {
  if (testBugs.active !== bug) return false;
  testBugs.hits += 1;
  return true;
}
