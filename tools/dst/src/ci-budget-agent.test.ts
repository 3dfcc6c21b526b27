import { expect } from 'vitest';
import { agentScenario } from './agent-scenario.js';
import { ciAgentSeeds, ciBudgetTests } from './internal/ci-budget.js';

ciBudgetTests(1, ciAgentSeeds, agentScenario, (stats) => {
  // The seeds reach what the agent invariants are about: operators approve and reject tool
  // calls, crashes leave must-not-run-twice calls interrupted and a person re-runs or records
  // them, model calls are repeated mid-call (at-least-once) but never for a recorded decision.
  expect(stats['ended:goal_completed']).toBeGreaterThan(0);
  expect(stats['approvals:tool_call:approved']).toBeGreaterThan(0);
  expect(stats['approvals:tool_call:rejected']).toBeGreaterThan(0);
  expect(stats['approvals:interrupted_side_effect:approved']).toBeGreaterThan(0);
  expect(stats.toolRunsMustNotRepeat).toBeGreaterThan(0);
  expect(stats.modelCalls).toBeGreaterThanOrEqual(stats.turns as number);
  expect(stats.batchedWrites).toBeGreaterThan(0);
});
