// P14: traverseBlueprint on 10 → 10,000 nodes, and rendering a 400-step run. Absolute numbers
// only: the 10k/1k ratio (interleaved, repeated) and the pass counts come from
// `pnpm --filter @loom/render bench:ratio`.
import { bench, describe } from 'vitest';
import {
  agentBlueprint,
  blueprintOf,
  countingTokenizer,
  runOf,
  traverse,
} from '../bench/p14-workloads.js';
import { renderHistory } from './render-history.js';
import { renderMessages } from './render-messages.js';

describe('P14 traverseBlueprint (goal: linear, 10k/1k ≤ 11×)', () => {
  for (const nodes of [10, 100, 1000, 10_000]) {
    const blueprint = blueprintOf(nodes);
    bench(`${nodes} nodes`, () => {
      traverse(blueprint);
    });
  }
});

describe('P14 rendering a 400-step run (goal: budget fitting in ≤ 2 passes)', () => {
  const history = runOf(400);
  const blueprint = agentBlueprint(history);
  const tokenizer = countingTokenizer();
  bench('renderMessages, everything fits (1 pass)', () => {
    renderMessages(blueprint, { tokenBudget: Infinity, tokenizer });
  });
  bench('renderMessages, 32,000-token budget: drops the oldest steps (2 passes)', () => {
    renderMessages(blueprint, { tokenBudget: 32_000, tokenizer });
  });
  bench('renderHistory, no budget', () => {
    renderHistory(history);
  });
});
